// The clusters overview: one row per cluster with health, master, replica count, worst lag, the last drill's
// outcome and automatic failover, from one request (GET /api/v1/clusters/overview).
import { useClustersOverview } from "../api/queries";
import { QueryState } from "../components/QueryState";
import { ClusterRow } from "../features/overview/ClusterRow";

export function ClustersPage() {
  const clusters = useClustersOverview();
  return (
    <section aria-labelledby="clusters-heading">
      <h1 id="clusters-heading">Clusters</h1>
      <QueryState isPending={clusters.isPending} error={clusters.error} what="clusters">
        {clusters.data && clusters.data.length === 0 ? (
          <p>No clusters yet. Register one through the API (POST /api/v1/clusters, then its discovery).</p>
        ) : (
          <table className="data">
            <thead>
              <tr>
                <th scope="col">Cluster</th>
                <th scope="col">Health</th>
                <th scope="col">Master</th>
                <th scope="col">Replicas</th>
                <th scope="col">Worst lag</th>
                <th scope="col">Last drill</th>
                <th scope="col">Auto failover</th>
              </tr>
            </thead>
            <tbody>
              {clusters.data?.map((cluster) => <ClusterRow key={cluster.id} cluster={cluster} />)}
            </tbody>
          </table>
        )}
      </QueryState>
    </section>
  );
}

// The clusters overview: one row per cluster with health, master, replica count, worst lag, the last drill's
// outcome and automatic failover, from one request (GET /api/v1/clusters/overview); for operators, registering a
// cluster from one seed server.
import { useClustersOverview } from "../api/queries";
import { RequireRole } from "../auth/RequireRole";
import { QueryState } from "../components/QueryState";
import { ClusterRow } from "../features/overview/ClusterRow";
import { RegisterClusterForm } from "../features/registration/RegisterClusterForm";

export function ClustersPage() {
  const clusters = useClustersOverview();
  return (
    <section aria-labelledby="clusters-heading">
      <h1 id="clusters-heading">Clusters</h1>
      <QueryState isPending={clusters.isPending} error={clusters.error} what="clusters">
        {clusters.data && clusters.data.length === 0 ? (
          <p>No clusters yet. Register one from one of its servers below, or through the API (POST /api/v1/clusters, then its discovery).</p>
        ) : (
          <div className="scroll-x">
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
          </div>
        )}
      </QueryState>
      <RequireRole role="operator">
        <details>
          <summary>Register a cluster</summary>
          <RegisterClusterForm />
        </details>
      </RequireRole>
    </section>
  );
}

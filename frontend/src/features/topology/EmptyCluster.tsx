// What a cluster with no server shows instead of an empty graph: that it has none, and how to add them — discovery
// from one seed server, or one server at a time — from ferryctl or the API.
import { useCluster } from "../../api/queries";

export function EmptyCluster({ clusterId }: { clusterId: number }) {
  const cluster = useCluster(clusterId);
  const clusterName = cluster.data?.name ?? String(clusterId);
  return (
    <section className="notice" aria-label="No servers yet">
      <p>
        <strong>{clusterName} has no servers yet.</strong> Add them, and the topology, positions and lag appear here within
        a poll:
      </p>
      <ul>
        <li>
          discover them from one seed server (it and every server it replicates with or from): for ferryd{" "}
          <code>ferryctl discover {clusterName} --host HOST --protocol-port 7301 --admin-port 7401</code>, for MariaDB{" "}
          <code>ferryctl discover {clusterName} --kind mariadb --host HOST --protocol-port 3306 --admin-port 3306</code>{" "}
          (the cluster needs its database logins first), or <code>POST /api/v1/clusters/{clusterId}/discovery</code>;
        </li>
        <li>
          or add one server:{" "}
          <code>ferryctl servers add {clusterName} --name NAME --host HOST --protocol-port PORT --admin-port PORT</code>.
        </li>
      </ul>
      <p className="small muted">
        Registering a new cluster from the overview does both at once; an operator can also{" "}
        <a href="#add-server">add a server or discover from one below</a>.
      </p>
    </section>
  );
}

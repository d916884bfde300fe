// A banner when the control plane speaks to the cluster's servers in clear text (no TLS to the ferryd nodes, or
// MariaDB logins without a CA): tokens and passwords cross the network readable.
import type { Schemas } from "../../api/client";

export function TransportWarning({ cluster }: { cluster: Schemas["ClusterRead"] }) {
  if (!cluster.plaintext_transport) return null;
  const mariadb = cluster.db_user_set;
  return (
    <div className="banner" role="alert" aria-label="Clear-text transport">
      <strong>Clear text:</strong>{" "}
      {mariadb
        ? "no CA certificate is set for this cluster, so its MariaDB logins and queries cross the network unencrypted."
        : "the control plane reaches these nodes' admin API without TLS, so the node token crosses the network readable."}{" "}
      See docs/security.md.
    </div>
  );
}

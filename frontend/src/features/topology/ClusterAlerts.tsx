// The cluster's alerts as a banner: a master left read-only with no operation running, an operation interrupted
// by the death of its API instance (reconciled afterwards: its error says what was found and done), a replica that
// is writable, a replica holding errant transactions (its own writes no master of it has).
import type { Schemas } from "../../api/client";

type Alert = Schemas["ClusterAlert"];

const TITLES: Record<Alert["kind"], string> = {
  master_read_only: "Master read-only",
  operation_interrupted: "Operation interrupted",
  writable_replica: "Writable replica",
  errant_transactions: "Errant transactions",
};

export function ClusterAlerts({ alerts }: { alerts: Alert[] | undefined }) {
  if (!alerts || alerts.length === 0) {
    return null;
  }
  return (
    <div className="banner" role="alert" aria-label="Cluster alerts">
      <ul>
        {alerts.map((alert) => (
          <li key={`${alert.kind}-${alert.registered_server_id ?? ""}-${alert.operation_id ?? ""}`}>
            <strong>{TITLES[alert.kind]}:</strong> {alert.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

// The Operations tab: for operators, the guarded actions (switchover first) and the server flags (maintenance,
// fences, failover acknowledgement); for everyone, the history (the write-unavailability window of each switchover
// and failover over time, then the table). A
// viewer sees no control that changes state, only a line saying why.
import { useTopology } from "../../api/queries";
import { useAuth } from "../../auth/AuthProvider";
import { RequireRole } from "../../auth/RequireRole";
import { QueryState } from "../../components/QueryState";
import { FailoverForm } from "./FailoverForm";
import { OperationHistory } from "./OperationHistory";
import { RepointForm, StartStopReplication } from "./ReplicationActions";
import { BringLevelForm, ReadOnlyForm } from "./ServerActions";
import { FailoverSuspension, ServerFlags } from "./ServerFlags";
import { SwitchoverForm } from "./SwitchoverForm";
import { UnavailabilityHistory } from "./UnavailabilityChart";

export function OperationsView({ clusterId, clusterName }: { clusterId: number; clusterName: string }) {
  const topology = useTopology(clusterId);
  const { role } = useAuth();
  const nodes = topology.data?.nodes ?? [];
  const names = new Map(nodes.map((n) => [n.registered_server_id, n.name]));
  const serverName = (id: number) => names.get(id) ?? `server ${id}`;
  const props = { clusterId, clusterName, nodes, serverName };
  return (
    <>
      <RequireRole
        role="operator"
        fallback={<p className="muted">Your token's role ({role}) may read but not start operations.</p>}
      >
        <QueryState isPending={topology.isPending} error={topology.error} what="servers">
          <section aria-labelledby="ops-heading" className="operations">
            <h2 id="ops-heading">Start an operation</h2>
            <FailoverSuspension clusterId={clusterId} />
            <SwitchoverForm {...props} edges={topology.data?.edges ?? []} />
            <details>
              <summary>Failover, repoint, read-only, replication, bring level</summary>
              <FailoverForm {...props} edges={topology.data?.edges ?? []} />
              <RepointForm {...props} />
              <ReadOnlyForm {...props} />
              <StartStopReplication {...props} />
              <BringLevelForm {...props} />
            </details>
            <details>
              <summary>Maintenance and fences</summary>
              <ServerFlags clusterId={clusterId} />
            </details>
          </section>
        </QueryState>
      </RequireRole>
      <section aria-labelledby="history-heading">
        <h2 id="history-heading">History</h2>
        <UnavailabilityHistory clusterId={clusterId} />
        <OperationHistory clusterId={clusterId} serverName={serverName} />
      </section>
    </>
  );
}

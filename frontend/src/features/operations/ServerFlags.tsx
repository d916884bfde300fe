// Per-server flags an operator sets directly (not operations): maintenance on/off and clearing a fence; and,
// when a failover suspended automatic failover, acknowledging it. Each asks once before it acts.
import { useAcknowledgeFailover, useSetMaintenance, useUnfence } from "../../api/mutations";
import { useCluster, useServers } from "../../api/queries";
import { ConfirmButton } from "../../components/ConfirmButton";
import { ErrorMessage, QueryState } from "../../components/QueryState";
import { Badge } from "../../components/StatusBadge";
import { formatTime } from "../../lib/format";

export function FailoverSuspension({ clusterId }: { clusterId: number }) {
  const cluster = useCluster(clusterId);
  const acknowledge = useAcknowledgeFailover(clusterId);
  const suspended = cluster.data?.failover_suspended_at;
  if (!cluster.data?.auto_failover || !suspended) return null;
  return (
    <div className="banner" role="status">
      <Badge tone="warn" symbol="⚠">automatic failover suspended</Badge> since {formatTime(suspended)}, after failover
      {cluster.data.last_failover_operation_id != null ? ` #${cluster.data.last_failover_operation_id}` : ""}.{" "}
      <ConfirmButton
        label="Acknowledge"
        confirmLabel="Acknowledge the failover (automatic failover resumes after its cool-down)"
        disabled={acknowledge.isPending}
        onConfirm={() => acknowledge.mutate()}
      />
      {acknowledge.error ? <ErrorMessage error={acknowledge.error} /> : null}
    </div>
  );
}

export function ServerFlags({ clusterId }: { clusterId: number }) {
  const servers = useServers(clusterId);
  const maintenance = useSetMaintenance(clusterId);
  const unfence = useUnfence(clusterId);
  return (
    <QueryState isPending={servers.isPending} error={servers.error} what="servers">
      <table className="data" aria-label="Server flags">
        <thead>
          <tr>
            <th scope="col">Server</th>
            <th scope="col">Maintenance</th>
            <th scope="col">Fence</th>
          </tr>
        </thead>
        <tbody>
          {servers.data?.map((server) => (
            <tr key={server.id}>
              <th scope="row">{server.name}</th>
              <td>
                {server.maintenance ? <Badge tone="warn" symbol="⚑">in maintenance</Badge> : "no"}{" "}
                <ConfirmButton
                  label={server.maintenance ? "End maintenance" : "Start maintenance"}
                  confirmLabel={server.maintenance ? `End maintenance of ${server.name}` : `Put ${server.name} in maintenance`}
                  disabled={maintenance.isPending}
                  onConfirm={() => maintenance.mutate({ serverId: server.id, maintenance: !server.maintenance })}
                />
              </td>
              <td>
                {server.fenced ? (
                  <>
                    <Badge tone="bad" symbol="⛔">{`fenced: ${server.fence_reason ?? "by a failover"}`}</Badge>{" "}
                    <ConfirmButton
                      label="Unfence"
                      confirmLabel={`Unfence ${server.name} (it stays read-only)`}
                      disabled={unfence.isPending}
                      onConfirm={() => unfence.mutate(server.id)}
                    />
                  </>
                ) : (
                  "no"
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {maintenance.error ? <ErrorMessage error={maintenance.error} /> : null}
      {unfence.error ? <ErrorMessage error={unfence.error} /> : null}
    </QueryState>
  );
}

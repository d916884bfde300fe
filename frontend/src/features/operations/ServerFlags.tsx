// Per-server flags an operator sets directly (not operations): maintenance (a reason and a duration; who set it,
// why and "ends in …" shown; ended early by a second press) and clearing a fence; and, when a failover suspended
// automatic failover, acknowledging it. Each asks once before it acts.
import { useState } from "react";
import { Link } from "react-router-dom";
import { useAcknowledgeFailover, useSetMaintenance, useUnfence } from "../../api/mutations";
import { useCluster, useServers } from "../../api/queries";
import { ConfirmButton } from "../../components/ConfirmButton";
import { ErrorMessage, QueryState } from "../../components/QueryState";
import { Badge } from "../../components/StatusBadge";
import { formatTime } from "../../lib/format";
import { useNow } from "../../lib/useNow";
import { inMaintenance } from "../maintenance/maintenance";
import { MaintenanceForm } from "../maintenance/MaintenanceForm";
import { MaintenanceNote, useRefreshOnMaintenanceEnd } from "../maintenance/MaintenanceNote";
import { serverPath } from "../server/serverRef";

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
  const [editing, setEditing] = useState<number | null>(null);
  const now = useNow();
  useRefreshOnMaintenanceEnd(clusterId, servers.data, now);
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
              <th scope="row"><Link to={serverPath(clusterId, server, servers.data)}>{server.name}</Link></th>
              <td>
                <MaintenanceNote server={server} now={now} />{" "}
                {inMaintenance(server, now) ? (
                  <ConfirmButton
                    label="End maintenance"
                    confirmLabel={`End maintenance of ${server.name}`}
                    disabled={maintenance.isPending}
                    onConfirm={() => maintenance.mutate({ serverId: server.id, body: { maintenance: false } })}
                  />
                ) : editing === server.id ? (
                  <MaintenanceForm clusterId={clusterId} server={server} onDone={() => setEditing(null)} />
                ) : (
                  <button type="button" onClick={() => setEditing(server.id)}>
                    Start maintenance
                  </button>
                )}
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

// The Topology tab: the cluster's alerts, the graph, then the same facts as tables (servers with their kind and
// version, and warnings: a master whose replicas may get ahead of its binlog, what the server reports (semi-sync
// fallen back, binlog expiry held back); connections with IO/SQL state, lag per domain and the last error — in words
// with what to do, then the server's own code and message, e.g. MariaDB's 1062), which are also what keyboard and screen-reader users read.
// A connection stopped by an SQL error offers operators "Skip and restart" (SkipTransactions); viewers see no control.
// A cluster without servers says how to add them (EmptyCluster).
import { Link } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { useServers, useTopology } from "../../api/queries";
import { RequireRole } from "../../auth/RequireRole";
import { QueryState } from "../../components/QueryState";
import { Badge, HealthBadge } from "../../components/StatusBadge";
import { useNow } from "../../lib/useNow";
import { MaintenanceNote, useRefreshOnMaintenanceEnd } from "../maintenance/MaintenanceNote";
import { ClusterAlerts } from "./ClusterAlerts";
import { ServerAdmin } from "../serverAdmin/ServerAdmin";
import { nodeIdentity, serverPath } from "../server/serverRef";
import { EmptyCluster } from "./EmptyCluster";
import { ConnectionSettings } from "./ConnectionSettings";
import { connectionState } from "./connectionState";
import { SkipTransactions } from "./SkipTransactions";
import { ProxyPanel } from "./ProxyPanel";
import { TopologyGraph } from "./TopologyGraph";

const KIND_NAMES: Record<Schemas["ServerKind"], string> = { ferry: "ferryd", mariadb: "MariaDB" };
/** Why a master whose binlog reaches its replicas before it is durable gets a warning. */
const UNSYNCED_BINLOG =
  "Sends transactions to its replicas before its binlog is durable (ferryd durability none/network, MariaDB sync_binlog ≠ 1): " +
  "after a crash of its machine its replicas may hold transactions it lost, so it must rejoin as their replica, not serve as master.";

export function TopologyView({ clusterId }: { clusterId: number }) {
  const topology = useTopology(clusterId);
  const servers = useServers(clusterId);
  const fenced = new Map(servers.data?.filter((s) => s.fenced).map((s) => [s.id, s.fence_reason ?? "fenced"]) ?? []);
  const data = topology.data;
  const now = useNow();
  useRefreshOnMaintenanceEnd(clusterId, data?.nodes, now);
  const names = new Map(data?.nodes.map((n) => [n.registered_server_id, n.name]) ?? []);
  return (
    <QueryState isPending={topology.isPending} error={topology.error} what="topology">
      {data && data.nodes.length === 0 ? <EmptyCluster clusterId={clusterId} /> : null}
      {data && data.nodes.length > 0 ? (
        <>
          <ClusterAlerts alerts={data.alerts} />
          <div className="scroll-x">
            <TopologyGraph topology={data} fenced={new Set(fenced.keys())} />
          </div>
          <ProxyPanel clusterId={clusterId} names={names} />
          <h2>Servers</h2>
          <div className="scroll-x">
            <table className="data" aria-label="Servers">
              <thead>
                <tr>
                  <th scope="col">Server</th>
                  <th scope="col">Role</th>
                  <th scope="col">Kind / version</th>
                  <th scope="col">Health</th>
                  <th scope="col">Read-only</th>
                  <th scope="col">Maintenance</th>
                  <th scope="col">Fenced</th>
                  <th scope="col">Position (gtid_current_pos)</th>
                </tr>
              </thead>
              <tbody>
                {data.nodes.map((node) => (
                  <tr key={node.registered_server_id}>
                    <th scope="row"><Link to={serverPath(clusterId, nodeIdentity(node), data.nodes.map(nodeIdentity))}>{node.name}</Link></th>
                    <td>{node.role === "master" ? <strong>★ master</strong> : node.role}</td>
                    <td>
                      {KIND_NAMES[node.kind ?? "ferry"]}
                      <div className="small mono">{node.version ?? "version not read yet"}</div>
                      {node.binlog_format ? <div className="small">binlog format {node.binlog_format}</div> : null}
                      {node.replicas_may_be_ahead && (node.role === "master" || node.role === "intermediate") ? (
                        <Badge tone="warn" symbol="⚠" title={UNSYNCED_BINLOG}>
                          replicas may be ahead
                        </Badge>
                      ) : null}
                      {(node.warnings ?? []).map((warning) => (
                        <div key={warning} className="small">
                          <Badge tone="warn" symbol="⚠" title={warning}>
                            {warning}
                          </Badge>
                        </div>
                      ))}
                    </td>
                    <td><HealthBadge health={node.health} /></td>
                    <td>{node.read_only == null ? "unknown" : node.read_only ? <Badge tone="info">read-only</Badge> : "writable"}</td>
                    <td><MaintenanceNote server={node} now={now} short /></td>
                    <td>{fenced.has(node.registered_server_id) ? <Badge tone="bad" symbol="⛔">{`fenced: ${fenced.get(node.registered_server_id)}`}</Badge> : "no"}</td>
                    <td className="mono">{node.gtid_current_pos ?? "—"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <h2>Replication connections</h2>
          {data.edges.length === 0 ? (
            <p className="muted">No replication connections.</p>
          ) : (
            <div className="scroll-x">
              <table className="data" aria-label="Replication connections">
                <thead>
                  <tr>
                    <th scope="col">Replica</th>
                    <th scope="col">Master</th>
                    <th scope="col">Connection</th>
                    <th scope="col">State</th>
                    <th scope="col">IO / SQL</th>
                    <th scope="col">Settings</th>
                    <th scope="col">Lag per domain</th>
                    <th scope="col">Last error</th>
                  </tr>
                </thead>
                <tbody>
                  {data.edges.map((edge) => {
                    const state = connectionState(edge);
                    return (
                      <tr key={edge.link_id}>
                        <th scope="row">{names.get(edge.replica_registered_server_id) ?? edge.replica_registered_server_id}</th>
                        <td>{edge.master_registered_server_id != null ? names.get(edge.master_registered_server_id) : edge.master_address ?? "unknown"}</td>
                        <td className="mono">{edge.connection ?? "—"}</td>
                        <td>
                          <Badge tone={state.tone}>{state.text}</Badge>
                          {state.reason ? <div className="small">{state.reason}</div> : null}
                        </td>
                        <td>{edge.io_state ?? "—"} / {edge.sql_state ?? "—"}</td>
                        <td><ConnectionSettings settings={edge.settings} /></td>
                        <td>
                          {Object.entries(edge.lag).map(([domain, lag]) => (
                            <div key={domain}>domain {domain}: {lag.words}</div>
                          ))}
                        </td>
                        <td>
                          {edge.last_error_code ? (
                            <span className="error">
                              {edge.last_error_words ? <span>{edge.last_error_words} </span> : null}
                              <strong className="mono">{edge.last_error_code}</strong>: {edge.last_error_message ?? ""}
                            </span>
                          ) : (
                            "—"
                          )}
                          <RequireRole role="operator">
                            <SkipTransactions
                              clusterId={clusterId}
                              edge={edge}
                              replicaName={names.get(edge.replica_registered_server_id) ?? `server ${edge.replica_registered_server_id}`}
                              serverName={(id) => names.get(id) ?? `server ${id}`}
                            />
                          </RequireRole>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
        </>
      ) : null}
      {/* One place whether the cluster is empty or not: what it says after adding the first server stays. */}
      {data ? <ServerAdmin clusterId={clusterId} open={data.nodes.length === 0} /> : null}
    </QueryState>
  );
}

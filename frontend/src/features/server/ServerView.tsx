// One server on a page of its own: its label (name and server_id), for operators its settings (edit, rename,
// remove: ServerSettings.tsx), kind and version, addresses, role, health,
// read-only, binlog format, semi-sync as a master, promotion rule and labels; its maintenance (who, why, ends in …) and fence; each
// replication connection it has, with its state, lag and settings (delay, parallel mode × workers, semi-sync,
// filters, heartbeat), and the replicas that follow it; the cluster's alerts about it (writable while it replicates,
// errant transactions) and its errant transactions per domain; its positions per domain; and the recent operations and audit
// rows that concern it. Every table scrolls within its box, so a phone's width holds. Its path names it by the
// server_id it reports (serverRef.ts).
import { useState, type ReactNode } from "react";
import { Link } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { useAudit, useOperations, useServers, useTopology } from "../../api/queries";
import { RequireRole } from "../../auth/RequireRole";
import { QueryState } from "../../components/QueryState";
import { Badge, HealthBadge } from "../../components/StatusBadge";
import { formatTime, humanize } from "../../lib/format";
import { LiveMaintenanceNote } from "../maintenance/MaintenanceNote";
import { ConnectionSettings } from "../topology/ConnectionSettings";
import { connectionState } from "../topology/connectionState";
import { auditTouches, domainPositions, operationTouches } from "./serverFacts";
import { Consumers } from "./Consumers";
import { ParallelApply } from "./ParallelApply";
import { ConsistencyCheck } from "./ConsistencyCheck";
import { Rebuild } from "./Rebuild";
import { Rejoin } from "./Rejoin";
import { resolveServerRef } from "./serverRef";
import { ServerSettings } from "./ServerSettings";

const KIND_NAMES: Record<Schemas["ServerKind"], string> = { ferry: "ferryd", mariadb: "MariaDB" };

function address(host: string, port: number | null | undefined): string {
  if (port == null) return "not known";
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Its master-side semi-sync in words: "on, AFTER_SYNC, timeout 10000 ms", "off", or not read. */
export function semiSync(role: Schemas["MasterRoleRead"] | null | undefined): string {
  if (role == null || role.semi_sync == null) return "not reported";
  if (!role.semi_sync) return "off";
  return ["on", role.semi_sync_wait_point, role.semi_sync_timeout_ms != null ? `timeout ${role.semi_sync_timeout_ms} ms` : null]
    .filter(Boolean)
    .join(", ");
}

function Facts({ server, node }: { server: Schemas["ServerRead"]; node: Schemas["TopologyNode"] | undefined }) {
  const rows: [string, ReactNode][] = [
    ["Kind", `${KIND_NAMES[server.kind]}${server.version ? ` — ${server.version}` : ""}`],
    ["Address", address(server.host, server.protocol_port)],
    ["Admin address", server.admin_port == null ? "none (not polled)" : address(server.host, server.admin_port)],
    ["Role", node?.role ?? "not known"],
    ["Health", <HealthBadge key="h" health={server.health} />],
    ["Read-only", server.read_only == null ? "unknown" : server.read_only ? "yes" : "no (writable)"],
    ["Binlog format", server.binlog_format ?? "not reported"],
    ["Semi-sync (as a master)", semiSync(server.master_role)],
    ["Replicas may be ahead", server.replicas_may_be_ahead == null ? "not read yet" : server.replicas_may_be_ahead ? "yes" : "no"],
    ["Promotion rule", server.promotion_rule],
    ["Labels", Object.entries(server.labels).map(([k, v]) => `${k}=${v}`).join(", ") || "none"],
    ["Last seen", server.last_seen_at ? formatTime(server.last_seen_at) : "never"],
    ["Last error", server.last_error ?? "none"],
  ];
  return (
    <dl className="facts">
      {rows.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function Connections({ edges, names, title, side }: {
  edges: Schemas["TopologyEdge"][];
  names: Map<number, string>;
  title: string;
  side: "master" | "replica";
}) {
  if (edges.length === 0) return <p className="muted">{side === "master" ? "It replicates from no server." : "No server replicates from it."}</p>;
  return (
    <div className="scroll-x">
      <table className="data" aria-label={title}>
        <thead>
          <tr>
            <th scope="col">{side === "master" ? "Master" : "Replica"}</th>
            <th scope="col">Connection</th>
            <th scope="col">State</th>
            <th scope="col">Lag</th>
            {side === "master" ? <th scope="col">Settings</th> : null}
          </tr>
        </thead>
        <tbody>
          {edges.map((edge) => {
            const other = side === "master" ? edge.master_registered_server_id : edge.replica_registered_server_id;
            const state = connectionState(edge);
            return (
              <tr key={edge.link_id}>
                <th scope="row">{other != null ? names.get(other) ?? `server ${other}` : edge.master_address ?? "unknown"}</th>
                <td className="mono">{edge.connection || "(default)"}</td>
                <td><Badge tone={state.tone}>{state.text}</Badge></td>
                <td>{edge.worst_lag?.words ?? "no lag reported"}</td>
                {side === "master" ? <td><ConnectionSettings settings={edge.settings} /></td> : null}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** Its own writes that none of its masters has, per domain (the replica guard's finding). */
function Errant({ node, alerts }: { node: Schemas["TopologyNode"] | undefined; alerts: Schemas["ClusterAlert"][] }) {
  const errant = node?.errant ?? [];
  return (
    <>
      {alerts.length > 0 ? (
        <div className="banner" role="alert" aria-label="Alerts about this server">
          <ul>
            {alerts.map((alert) => <li key={alert.kind}>{alert.message}</li>)}
          </ul>
        </div>
      ) : null}
      {errant.length === 0 ? (
        <p className="muted">None: it holds no transaction of its own that its masters lack.</p>
      ) : (
        <div className="scroll-x">
          <table className="data" aria-label="Errant transactions">
            <thead>
              <tr>
                <th scope="col">Domain</th>
                <th scope="col">Transactions</th>
                <th scope="col">First</th>
                <th scope="col">Last</th>
                <th scope="col">Since</th>
              </tr>
            </thead>
            <tbody>
              {errant.map((e) => (
                <tr key={e.domain}>
                  <th scope="row">{e.domain}</th>
                  <td>{e.transactions != null ? e.transactions.toLocaleString("en") : "not countable from positions"}</td>
                  <td className="mono">{e.first_gtid ?? "—"}</td>
                  <td className="mono">{e.last_gtid}</td>
                  <td>{formatTime(e.since)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function Positions({ server }: { server: Schemas["ServerRead"] }) {
  const rows = domainPositions(server);
  if (rows.length === 0) return <p className="muted">No position read yet.</p>;
  return (
    <div className="scroll-x">
      <table className="data" aria-label="Positions per domain">
        <thead>
          <tr>
            <th scope="col">Domain</th>
            <th scope="col">gtid_binlog_pos</th>
            <th scope="col">gtid_slave_pos</th>
            <th scope="col">gtid_current_pos</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.domain}>
              <th scope="row">{row.domain}</th>
              <td className="mono">{row.binlog ?? "—"}</td>
              <td className="mono">{row.slave ?? "—"}</td>
              <td className="mono">{row.current ?? "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function History({ clusterId, serverId }: { clusterId: number; serverId: number }) {
  const operations = useOperations(clusterId, 200);
  const audit = useAudit({ clusterId, serverId, limit: 50 });
  const touching = (operations.data ?? []).filter((op) => operationTouches(op, serverId)).slice(0, 10);
  const rows = (audit.data ?? []).filter((entry) => auditTouches(entry, serverId)).slice(0, 10);
  return (
    <>
      <h2>Recent operations</h2>
      {touching.length === 0 ? (
        <p className="muted">No recent operation named it.</p>
      ) : (
        <ul aria-label="Recent operations" className="small">
          {touching.map((op) => (
            <li key={op.id}>
              #{op.id} {humanize(op.type)}{op.dry_run ? " (dry run)" : ""} — {op.state}, {formatTime(op.created_at)} by {op.requester}
            </li>
          ))}
        </ul>
      )}
      <h2>Audit</h2>
      {rows.length === 0 ? (
        <p className="muted">No audit row names it.</p>
      ) : (
        <ul aria-label="Audit rows" className="small">
          {rows.map((entry) => (
            <li key={entry.id}>
              {formatTime(entry.at)} {entry.actor ?? "the control plane"}: {humanize(entry.action)} — {entry.outcome}
              {typeof (entry.details as { reason?: unknown }).reason === "string" ? ` (${(entry.details as { reason: string }).reason})` : ""}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

/** The page of the server `serverRef` names (its server_id, or registered-N: see serverRef.ts). */
export function ServerView({ clusterId, serverRef }: { clusterId: number; serverRef: string }) {
  const servers = useServers(clusterId);
  const resolved = servers.data ? resolveServerRef(serverRef, servers.data) : null;
  return (
    <QueryState isPending={servers.isPending} error={servers.error} what="server">
      {resolved?.kind === "missing" || resolved?.kind === "invalid" ? (
        <p role="alert" className="error">{resolved.words}</p>
      ) : null}
      {resolved?.kind === "ambiguous" ? (
        <div role="alert" className="error">
          <p>Several registered servers report server_id {serverRef}; each has its own page:</p>
          <ul>
            {resolved.servers.map((s) => (
              <li key={s.id}><Link to={`/clusters/${clusterId}/servers/registered-${s.id}`}>{s.name} (the control plane's id {s.id})</Link></li>
            ))}
          </ul>
        </div>
      ) : null}
      {resolved?.kind === "found" ? <ServerPage clusterId={clusterId} server={resolved.server} /> : null}
    </QueryState>
  );
}

/** A read-only server that replicates from nobody and feeds nobody (its connection lost or removed): rejoinable, like a
 * fenced former master. */
function isStray(node: Schemas["TopologyNode"] | undefined): boolean {
  return node != null && node.role === "standalone" && node.read_only === true;
}

function ServerPage({ clusterId, server }: { clusterId: number; server: Schemas["ServerRead"] }) {
  const serverId = server.id;
  const topology = useTopology(clusterId);
  const node = topology.data?.nodes.find((n) => n.registered_server_id === serverId);
  const names = new Map(topology.data?.nodes.map((n) => [n.registered_server_id, n.label]) ?? []);
  const edges = topology.data?.edges ?? [];
  // Once opened, the rejoin dialog stays while its run makes the server a replica (no longer fenced nor stray).
  const [rejoinOpened, setRejoinOpened] = useState(false);
  return (
    <>
      {server ? (
        <article className="server-page" aria-label={server.label}>
          <h2 className="server-label">{server.label}</h2>
          <RequireRole role="operator">
            <ServerSettings server={server} />
          </RequireRole>
          <Facts server={server} node={node} />
          <h2>Maintenance and fence</h2>
          <p>
            Maintenance: <LiveMaintenanceNote clusterId={clusterId} server={server} />
          </p>
          <p>
            Fence: {server.fenced ? <Badge tone="bad" symbol="⛔">{`fenced: ${server.fence_reason ?? "by a failover"}`}</Badge> : "no"}
          </p>
          {server.fenced || isStray(node) || rejoinOpened ? (
            <Rejoin
              clusterId={clusterId}
              serverId={serverId}
              label={server.label}
              serverName={(id) => names.get(id) ?? `server ${id}`}
              onOpen={() => setRejoinOpened(true)}
            />
          ) : null}
          {node != null && node.role !== "master" ? (
            <Rebuild clusterId={clusterId} serverId={serverId} label={server.label} serverName={(id) => names.get(id) ?? `server ${id}`} />
          ) : null}
          <h2>Replicates from</h2>
          <Connections edges={edges.filter((e) => e.replica_registered_server_id === serverId)} names={names} title="Replication connections" side="master" />
          {edges.some((e) => e.replica_registered_server_id === serverId) ? (
            <>
              <h2>Parallel apply</h2>
              <ParallelApply clusterId={clusterId} serverId={serverId} serverName={(id) => names.get(id) ?? `server ${id}`} />
              <h2>Consistency with its source</h2>
              <ConsistencyCheck clusterId={clusterId} serverId={serverId} label={server.label} serverName={(id) => names.get(id) ?? `server ${id}`} />
            </>
          ) : null}
          <h2>Replicas</h2>
          <Connections edges={edges.filter((e) => e.master_registered_server_id === serverId)} names={names} title="Replicas" side="replica" />
          <h2>Change consumers</h2>
          <Consumers clusterId={clusterId} serverId={serverId} />
          <h2>Errant transactions</h2>
          <Errant node={node} alerts={(topology.data?.alerts ?? []).filter((a) => a.registered_server_id === serverId && a.kind !== "operation_interrupted")} />
          <h2>Positions per domain</h2>
          <Positions server={server} />
          <History clusterId={clusterId} serverId={serverId} />
          <p><Link to={`/clusters/${clusterId}/topology`}>← the cluster's topology</Link></p>
        </article>
      ) : null}
    </>
  );
}

// One cluster in the overview table, as GET /api/v1/clusters/overview summarizes it: health (and why not
// healthy; what to look at that does not make it degraded, such as a stalled replica), master, replicas, worst lag
// (beyond each connection's configured delay), its last drill's outcome and automatic failover; a warning when the
// control plane talks to the cluster's servers in clear text.
import { Link } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { Badge, LagBadge, type Tone } from "../../components/StatusBadge";
import { formatDuration, formatTime } from "../../lib/format";
import { DrillOutcomeBadge } from "../drills/DrillOutcome";

type ClusterOverview = Schemas["ClusterOverview"];

const HEALTH: Record<ClusterOverview["health"], { tone: Tone; symbol: string }> = {
  healthy: { tone: "ok", symbol: "●" },
  degraded: { tone: "warn", symbol: "▲" },
  down: { tone: "bad", symbol: "✕" },
  empty: { tone: "muted", symbol: "○" },
};

export function ClusterRow({ cluster }: { cluster: ClusterOverview }) {
  const lastDrill = cluster.last_drill;
  return (
    <tr>
      <th scope="row">
        <Link to={`/clusters/${cluster.id}/topology`}>{cluster.name}</Link>
        {cluster.description ? <div className="muted small">{cluster.description}</div> : null}
        {cluster.plaintext_transport ? (
          <div>
            <Badge
              tone="warn"
              symbol="⚠"
              title="The control plane speaks to these servers without TLS: tokens and credentials cross the network readable (docs/security.md)"
            >
              clear text
            </Badge>
          </div>
        ) : null}
      </th>
      <td>
        <Badge {...HEALTH[cluster.health]}>{cluster.health}</Badge>
        {cluster.problems.length > 0 ? <div className="small">{cluster.problems.join("; ")}</div> : null}
        {(cluster.warnings ?? []).map((warning) => (
          <div key={warning} className="small">
            <Badge tone="warn" symbol="⚠">{warning}</Badge>
          </div>
        ))}
      </td>
      <td>{cluster.masters.length > 0 ? cluster.masters.join(", ") : <span className="muted">none</span>}</td>
      <td>
        {cluster.replica_count} <span className="muted small">of {cluster.server_count} servers</span>
      </td>
      <td>
        {cluster.worst_lag ? (
          <>
            <LagBadge level={cluster.worst_lag.level}>{cluster.worst_lag.words}</LagBadge>
            <div className="small muted">
              {cluster.worst_lag.replica}
              {cluster.worst_lag.connection ? ` (${cluster.worst_lag.connection})` : ""}, domain {cluster.worst_lag.domain}
            </div>
          </>
        ) : (
          <span className="muted">no replicas</span>
        )}
      </td>
      <td>
        {lastDrill ? (
          <>
            <DrillOutcomeBadge run={lastDrill} />
            <div className="small">
              {formatTime(lastDrill.started_at)}
              {lastDrill.rto_s != null ? ` · RTO ${formatDuration(lastDrill.rto_s)}` : ""}
            </div>
          </>
        ) : (
          <span className="muted">never</span>
        )}
      </td>
      <td>{cluster.auto_failover ? (cluster.failover_suspended_at ? "suspended" : "on") : "off"}</td>
    </tr>
  );
}

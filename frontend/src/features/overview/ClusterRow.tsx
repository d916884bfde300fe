// One cluster in the overview table: its summary from the topology (health, master, replicas, worst lag) and
// its last drill's outcome.
import { Link } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { useDrillRuns } from "../../api/drills";
import { useTopology } from "../../api/queries";
import { Badge, LagBadge, type Tone } from "../../components/StatusBadge";
import { formatLag, lagLevel } from "../../lib/format";
import { formatDuration, formatTime } from "../../lib/format";
import { DrillOutcomeBadge } from "../drills/DrillOutcome";
import { summarize, type ClusterHealth } from "./summary";

const HEALTH: Record<ClusterHealth, { tone: Tone; symbol: string }> = {
  healthy: { tone: "ok", symbol: "●" },
  degraded: { tone: "warn", symbol: "▲" },
  down: { tone: "bad", symbol: "✕" },
  empty: { tone: "muted", symbol: "○" },
};

export function ClusterRow({ cluster }: { cluster: Schemas["ClusterRead"] }) {
  const topology = useTopology(cluster.id);
  const summary = topology.data ? summarize(topology.data) : null;
  const drills = useDrillRuns(cluster.id, 1);
  const lastDrill = drills.data?.[0];
  return (
    <tr>
      <th scope="row">
        <Link to={`/clusters/${cluster.id}/topology`}>{cluster.name}</Link>
        {cluster.description ? <div className="muted small">{cluster.description}</div> : null}
      </th>
      {summary ? (
        <>
          <td>
            <Badge {...HEALTH[summary.health]}>{summary.health}</Badge>
            {summary.problems.length > 0 ? <div className="small">{summary.problems.join("; ")}</div> : null}
          </td>
          <td>{summary.masters.length > 0 ? summary.masters.join(", ") : <span className="muted">none</span>}</td>
          <td>
            {summary.replicaCount} <span className="muted small">of {summary.serverCount} servers</span>
          </td>
          <td>
            {summary.worstLag ? (
              <LagBadge level={lagLevel(summary.worstLag)}>{formatLag(summary.worstLag)}</LagBadge>
            ) : (
              <span className="muted">no replicas</span>
            )}
          </td>
        </>
      ) : (
        <td colSpan={4} className="muted">
          {topology.error ? "topology could not be read" : "loading…"}
        </td>
      )}
      <td>
        {lastDrill ? (
          <>
            <DrillOutcomeBadge run={lastDrill} />
            <div className="small">
              {formatTime(lastDrill.started_at)}
              {lastDrill.rto_s != null ? ` · RTO ${formatDuration(lastDrill.rto_s)}` : ""}
            </div>
          </>
        ) : drills.error ? (
          <span className="muted">unknown</span>
        ) : (
          <span className="muted">{drills.isPending ? "…" : "never"}</span>
        )}
      </td>
      <td>{cluster.auto_failover ? (cluster.failover_suspended_at ? "suspended" : "on") : "off"}</td>
    </tr>
  );
}

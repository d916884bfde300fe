// A drill run's outcome in words: passed, failed or interrupted (loudly, with its reasons), RTO (a failover drill's
// RPO too) and catch-up time, then a failover drill's figures, and each switch's catch-up before the window and its
// window's steps.
import type { DrillRun } from "../../api/drills";
import { Badge } from "../../components/StatusBadge";
import { formatDuration } from "../../lib/format";
import { DrillSwitchReport } from "../operations/CatchUp";
import { FailoverFigures, rpoText } from "./FailoverFigures";

export function DrillOutcomeBadge({ run }: { run: Pick<DrillRun, "state"> }) {
  switch (run.state) {
    case "passed":
      return <Badge tone="ok" symbol="✓">passed</Badge>;
    case "failed":
      return <Badge tone="bad" symbol="✕">FAILED</Badge>;
    case "interrupted":
      return <Badge tone="bad" symbol="⚡">INTERRUPTED</Badge>;
    default:
      return <Badge tone="info" symbol="…">{run.state}</Badge>;
  }
}

export function DrillOutcome({ run }: { run: DrillRun }) {
  return (
    <div className="drill-outcome" role={run.state === "failed" || run.state === "interrupted" ? "alert" : "status"}>
      <p>
        {run.kind === "failover" ? "Failover drill" : "Drill"} #{run.id}: <DrillOutcomeBadge run={run} />
        {run.rto_s != null ? ` · RTO ${formatDuration(run.rto_s)}` : ""}
        {run.kind === "failover" && run.rpo_lost != null ? ` · RPO ${rpoText(run.rpo_lost)}` : ""}
        {run.catch_up_s != null ? ` · catch-up ${formatDuration(run.catch_up_s)}` : ""}
      </p>
      {run.reasons.length > 0 ? (
        <ul className={run.state === "failed" || run.state === "interrupted" ? "error" : "small"}>
          {run.reasons.map((reason) => (
            <li key={reason}>{reason}</li>
          ))}
        </ul>
      ) : null}
      {run.failover ? <FailoverFigures run={run} /> : null}
      <DrillSwitchReport details={run.details} />
    </div>
  );
}

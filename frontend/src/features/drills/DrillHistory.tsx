// Drill runs, newest first: what each rehearsed (switchover or failover), outcome (a failure said loudly, with
// reasons), RTO (and, opened, each switch's catch-up before the window and its window's steps, or a failover's
// figures), a failover drill's RPO, catch-up, what the live canary writer saw, who or which schedule.
import type { DrillRun, DrillSchedule } from "../../api/drills";
import { formatDuration, formatTime } from "../../lib/format";
import { DrillSwitchReport, hasSwitchReport } from "../operations/CatchUp";
import { DrillOutcomeBadge } from "./DrillOutcome";
import { FailoverFigures, rpoText } from "./FailoverFigures";
import { WriterReport } from "./WriterReport";

export function DrillHistory({ runs, schedules }: { runs: DrillRun[]; schedules: DrillSchedule[] }) {
  const names = new Map(schedules.map((s) => [s.id, s.name]));
  if (runs.length === 0) return <p className="muted">No drill has run yet.</p>;
  return (
    <div className="scroll-x">
      <table className="data" aria-label="Drill history">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Started</th>
            <th scope="col">By</th>
            <th scope="col">Kind</th>
            <th scope="col">Outcome</th>
            <th scope="col">RTO</th>
            <th scope="col">RPO</th>
            <th scope="col">Catch-up</th>
            <th scope="col">Live writer</th>
            <th scope="col">Operation</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => (
            <tr key={run.id} data-state={run.state}>
              <td>{run.id}</td>
              <td>{formatTime(run.started_at)}</td>
              <td>
                {run.requester}
                {run.schedule_id != null ? <div className="small">schedule {names.get(run.schedule_id) ?? run.schedule_id}</div> : null}
              </td>
              <td>{run.kind}</td>
              <td>
                <DrillOutcomeBadge run={run} />
                {run.reasons.length > 0 ? <div className={run.state === "failed" ? "error small" : "small"}>{run.reasons.join("; ")}</div> : null}
              </td>
              <td>
                {formatDuration(run.rto_s)}
                {hasSwitchReport(run.details) ? (
                  <details>
                    <summary className="small">catch-up and window</summary>
                    <DrillSwitchReport details={run.details} />
                  </details>
                ) : null}
                {run.failover ? (
                  <details>
                    <summary className="small">failover figures</summary>
                    <FailoverFigures run={run} />
                  </details>
                ) : null}
              </td>
              <td className={(run.rpo_lost ?? 0) > 0 ? "error" : undefined}>{run.rpo_lost != null ? rpoText(run.rpo_lost) : "—"}</td>
              <td>{formatDuration(run.catch_up_s)}</td>
              <td>
                <WriterReport run={run} />
              </td>
              <td>{run.operation_id != null ? `#${run.operation_id}` : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

// What a drill's live canary writer saw, for the history: its write-unavailability window beside the switchover's
// RTO, acknowledged/refused/unknown writes per phase, and what was lost or duplicated (loudly, by name).
import type { DrillRun } from "../../api/drills";
import type { Schemas } from "../../api/client";
import { formatDuration } from "../../lib/format";

type Report = Schemas["CanaryWriterReport"];
const PHASES = ["before", "during", "after"] as const;

/** One line: "window 61.0 ms · 80 acknowledged, 3 refused, 0 unknown · none lost". */
export function writerSummary(report: Report): string {
  const totals = PHASES.reduce(
    (sum, phase) => ({
      refused: sum.refused + report.phases[phase].refused,
      unknown: sum.unknown + report.phases[phase].unknown,
    }),
    { refused: 0, unknown: 0 },
  );
  const outcome =
    report.lost > 0 || report.duplicated > 0
      ? `${report.lost} lost, ${report.duplicated} duplicated`
      : report.verified
        ? "none lost"
        : "not verified";
  return (
    `window ${formatDuration(report.window_s)} · ${report.acknowledged} acknowledged, ${totals.refused} refused, ` +
    `${totals.unknown} unknown · ${outcome}`
  );
}

export function WriterReport({ run }: { run: Pick<DrillRun, "id" | "canary_writer"> }) {
  const report = run.canary_writer;
  if (!report) return <span className="muted">not run</span>;
  const bad = report.lost > 0 || report.duplicated > 0;
  return (
    <details className="writer-report">
      <summary className={bad ? "error" : undefined}>{writerSummary(report)}</summary>
      <div className="scroll-x">
        <table className="data compact" aria-label={`Canary writer of drill #${run.id}`}>
          <thead>
            <tr>
              <th scope="col">Phase</th>
              <th scope="col">Acknowledged</th>
              <th scope="col">Refused</th>
              <th scope="col">Unknown</th>
            </tr>
          </thead>
          <tbody>
            {PHASES.map((phase) => (
              <tr key={phase}>
                <th scope="row">{phase}</th>
                <td>{report.phases[phase].acknowledged}</td>
                <td>{report.phases[phase].refused}</td>
                <td>{report.phases[phase].unknown}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <ul className="small">
        {report.windows.map((w) => (
          <li key={w.switch}>
            {w.switch === "switch_back" ? "switch back" : w.switch} {w.old_master_registered_server_id} → {w.new_master_registered_server_id}: writes
            unavailable {formatDuration(w.window_s)}
          </li>
        ))}
        <li>
          one write per domain ({report.domains.join(", ")}) every {report.interval_ms} ms
          {report.capped ? `, capped at ${report.per_domain_max} per domain` : ""}
        </li>
        {report.behind.length > 0 ? <li className="error">behind: {report.behind.join("; ")}</li> : null}
      </ul>
      {bad ? (
        <ul className="error small" aria-label={`Lost or duplicated canaries of drill #${run.id}`}>
          {[...report.lost_canaries, ...report.duplicated_gtids.map((g) => `duplicated GTID ${g}`)].map((item) => (
            <li key={item}>{item}</li>
          ))}
        </ul>
      ) : null}
    </details>
  );
}

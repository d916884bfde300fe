// A failover drill's figures in words: RTO as the failover measured it (fence → new master writable) and as the live
// canary writer saw it, RPO (acknowledged canaries the new master lacked, out of those looked for, the lost ones
// named), whether the old master rejoined, and any transaction only the old master had, per domain.
import type { DrillRun } from "../../api/drills";
import { formatDuration } from "../../lib/format";

/** "0 lost", "3 lost": acknowledged canary writes the new master lacked. */
export function rpoText(lost: number): string {
  return `${lost} lost`;
}

export function FailoverFigures({ run }: { run: Pick<DrillRun, "id" | "failover"> }) {
  const figures = run.failover;
  if (!figures) return null;
  const lost = figures.rpo_lost ?? null;
  const lostCanaries = figures.lost_canaries ?? [];
  const onlyOld = figures.only_on_old_master ?? [];
  const bad = (lost ?? 0) > 0 || onlyOld.length > 0;
  return (
    <section className="failover-figures" aria-label={`Failover figures of drill #${run.id}`}>
      <dl className="facts">
        <dt>RTO (fence → new master writable)</dt>
        <dd>{formatDuration(figures.rto_s ?? null)}</dd>
        <dt>RTO as the canary writer saw it</dt>
        <dd>{formatDuration(figures.writer_rto_s ?? null)}</dd>
        <dt>RPO</dt>
        <dd className={bad ? "error" : undefined}>
          {lost === null ? "not measured" : `${rpoText(lost)} of ${figures.rpo_checked} acknowledged canaries`}
        </dd>
        <dt>Candidate applied the fenced master's writes in</dt>
        <dd>{formatDuration(figures.catch_up_s ?? null)}</dd>
        <dt>Old master</dt>
        <dd className={figures.rejoined ? undefined : "error"}>{figures.rejoined ? "rejoined as a replica" : "did not rejoin"}</dd>
      </dl>
      {lostCanaries.length > 0 ? (
        <ul className="error small" aria-label={`Canaries lost in the failover of drill #${run.id}`}>
          {lostCanaries.map((canary) => (
            <li key={canary}>{canary}</li>
          ))}
        </ul>
      ) : null}
      {onlyOld.length > 0 ? (
        <ul className="error small" aria-label={`Transactions only the old master had in drill #${run.id}`}>
          {onlyOld.map((d) => (
            <li key={d.domain}>
              domain {d.domain}: {d.count ?? "some"} transaction(s){d.first ? ` ${d.first} …` : ""} {d.last}
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}

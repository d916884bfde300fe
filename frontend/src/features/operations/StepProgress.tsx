// An operation's steps as they happen (updated live; a move's catch-up before the window with its rates and predicted
// window while it waits), then its outcome: the error with its typed failure (what kind, whether servers were left
// changed and what), and for a switchover or failover the write-unavailability window and the new master.
import { Badge } from "../../components/StatusBadge";
import { formatDuration, humanize } from "../../lib/format";
import { CATCH_UP_STEP, CatchUpProgress, isCatchUpProgress } from "./CatchUp";
import {
  failureOf,
  failureWords,
  hasEnded,
  masters,
  stateSymbol,
  stateTone,
  stepDetail,
  unavailableSeconds,
  type Operation,
} from "./operationFacts";

export function StepProgress({ operation, serverName }: { operation: Operation; serverName: (id: number) => string }) {
  const unavailable = unavailableSeconds(operation);
  const { oldMaster, newMaster } = masters(operation);
  const failure = failureOf(operation);
  const failed = failure ? failureWords(failure) : null;
  return (
    <section aria-label={`Operation ${operation.id} progress`} className="progress">
      <p>
        Operation #{operation.id} ({operation.type}
        {operation.dry_run ? ", dry run" : ""}):{" "}
        <Badge tone={stateTone(operation.state)} symbol={stateSymbol(operation.state)}>
          {operation.state}
        </Badge>
      </p>
      <ol className="steps" aria-label="Steps">
        {operation.steps.map((step, i) => (
          <li key={`${step.name}-${i}`} data-state={step.state}>
            <Badge tone={stateTone(step.state)} symbol={stateSymbol(step.state)}>
              {step.state}
            </Badge>{" "}
            <strong>{humanize(step.name)}</strong>
            {step.duration_s != null ? <span className="small"> in {formatDuration(step.duration_s)}</span> : null}
            {step.name === CATCH_UP_STEP && isCatchUpProgress(step.detail) ? (
              <CatchUpProgress detail={step.detail} />
            ) : stepDetail(step.detail) ? (
              <div className="small">{stepDetail(step.detail)}</div>
            ) : null}
          </li>
        ))}
        {!hasEnded(operation) ? <li className="muted">… waiting for the next step</li> : null}
      </ol>
      {operation.error ? (
        <p role="alert" className="error">
          ✕ {operation.error}
        </p>
      ) : null}
      {failed ? (
        <div className="failure" aria-label="Failure">
          <p>
            <strong>{failed.kind}.</strong> {failed.changed}
          </p>
          {failed.left.length > 0 ? (
            <ul aria-label="Left changed">
              {failed.left.map((what) => (
                <li key={what}>{what}</li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
      {hasEnded(operation) && !operation.dry_run && operation.state === "succeeded" ? (
        <p role="status" className="outcome">
          ✓ Done.
          {newMaster != null ? ` ${serverName(newMaster)} is the master` : ""}
          {oldMaster != null && newMaster != null ? ` (was ${serverName(oldMaster)})` : ""}
          {newMaster != null ? "." : ""}
          {unavailable != null ? ` Writes were unavailable for ${formatDuration(unavailable)}.` : ""}
        </p>
      ) : null}
    </section>
  );
}

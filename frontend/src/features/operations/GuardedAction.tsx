// The guard around every state-changing operation: a dry run first (its preflight shown as a checklist), then,
// only if it passed, a confirmation — the cluster's name typed for dangerous ones — then the real request with
// an Idempotency-Key, and its steps followed live to the end, then its result. Once the run starts its preview is
// folded to one line (the run's own steps and outcome replace it: a stale plan never stands above a result).
// Changing a field throws the preview away.
import { useEffect, useState, type ReactNode } from "react";
import { newIdempotencyKey } from "../../api/mutations";
import { useOperation } from "../../api/queries";
import { ErrorMessage } from "../../components/QueryState";
import { Checklist } from "./Checklist";
import { hasEnded, preflightChecks, previewPassed, type Operation } from "./operationFacts";
import { StepProgress } from "./StepProgress";
import { TypedConfirmation } from "./TypedConfirmation";

export interface StartVariables<Body> {
  body: Body;
  idempotencyKey: string;
}

export interface GuardedActionProps<Body> {
  clusterId: number;
  clusterName: string;
  title: string;
  /** The button that runs it for real: "Switch over", "Set read-only"… */
  verb: string;
  /** Dangerous: the cluster's name must be typed. */
  typedConfirmation: boolean;
  /** Identifies the form's values: when it changes, the preview no longer applies. */
  paramsKey: string;
  /** The dry run's body, or null while the form is incomplete. */
  previewBody: () => Body | null;
  /** The real run's body, from the passed preview (so what runs is what was previewed). */
  runBody: (preview: Operation) => Body;
  start: (variables: StartVariables<Body>) => Promise<Operation>;
  serverName: (id: number) => string;
  /** What an ended operation found or did, shown below its preview and below the run once it ended. */
  outcome?: (operation: Operation) => ReactNode;
  /** What a running operation shows beside its steps while it runs (a rebuild's progress bar and its cancel). */
  live?: (operation: Operation) => ReactNode;
  children: ReactNode;
}

export function GuardedAction<Body>(props: GuardedActionProps<Body>) {
  const { clusterId, clusterName, title, verb, typedConfirmation, paramsKey } = props;
  const [previewId, setPreviewId] = useState<number | null>(null);
  const [runId, setRunId] = useState<number | null>(null);
  const [runKey, setRunKey] = useState<string | null>(null);
  const [typed, setTyped] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const preview = useOperation(clusterId, previewId);
  const run = useOperation(clusterId, runId);

  const reset = () => {
    setPreviewId(null);
    setRunId(null);
    setRunKey(null);
    setTyped("");
    setError(null);
  };
  // New parameters: the old preview does not apply (a run already started stays shown).
  useEffect(() => {
    if (runId === null) reset();
  }, [paramsKey]);

  const call = async (body: Body, key: string, then: (op: Operation) => void) => {
    setBusy(true);
    setError(null);
    try {
      then(await props.start({ body, idempotencyKey: key }));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  const previewBody = props.previewBody();
  const previewed = preview.data && hasEnded(preview.data) ? preview.data : null;
  const canRun = previewed != null && previewPassed(previewed) && (!typedConfirmation || typed === clusterName);

  // The live part stands outside the fieldset, which is disabled while the run goes on: its controls (a cancel) stay
  // usable.
  return (
    <>
      <fieldset className="guarded" disabled={runId !== null && !hasEnded(run.data)}>
        <legend>{title}</legend>
        {props.children}
        <div className="actions">
          <button
            type="button"
            disabled={busy || previewBody === null || runId !== null}
            onClick={() => previewBody && call(previewBody, newIdempotencyKey(), (op) => setPreviewId(op.id))}
          >
            Preview (dry run)
          </button>
        </div>
        {previewId !== null && !previewed ? <p role="status">Running the preflight…</p> : null}
        {previewed && runId !== null ? (
          <p className="small muted" data-testid="preview-folded">
            Ran after its preview (dry run, operation {previewed.id}) passed; what the run did is below.
          </p>
        ) : null}
        {previewed && runId === null ? (
          <div className="preview">
            <h4>Preflight</h4>
            <Checklist checks={preflightChecks(previewed)} />
            {props.outcome ? props.outcome(previewed) : null}
            {previewPassed(previewed) ? null : (
              <p role="alert" className="error">
                ✕ The preflight failed{previewed.error ? `: ${previewed.error}` : ""}. Nothing was changed.
              </p>
            )}
          </div>
        ) : null}
        {previewed && previewPassed(previewed) && runId === null ? (
          <div className="confirm-run">
            {typedConfirmation ? <TypedConfirmation expected={clusterName} value={typed} onChange={setTyped} /> : null}
            <button
              type="button"
              className="danger"
              disabled={!canRun || busy}
              onClick={() => {
                const key = runKey ?? newIdempotencyKey();
                setRunKey(key);
                void call(props.runBody(previewed), key, (op) => setRunId(op.id));
              }}
            >
              {verb}
            </button>
          </div>
        ) : null}
        {error ? <ErrorMessage error={error} /> : null}
        {run.data && !hasEnded(run.data) ? <StepProgress operation={run.data} serverName={props.serverName} /> : null}
        {run.data && hasEnded(run.data) ? (
          <section className="run-result" aria-label="Result">
            <h4>Result</h4>
            <StepProgress operation={run.data} serverName={props.serverName} />
            {props.outcome ? props.outcome(run.data) : null}
          </section>
        ) : null}
        {runId !== null && hasEnded(run.data) ? (
          <button type="button" onClick={reset}>
            Start a new {title.toLowerCase()}
          </button>
        ) : null}
      </fieldset>
      {run.data && !hasEnded(run.data) && props.live ? props.live(run.data) : null}
    </>
  );
}

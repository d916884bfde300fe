// A drill's dry run: what the drill with the chosen plan would do, changing nothing — for a switchover drill the
// switchover preflight to the candidate the drill would take (fixed, or next in rotation), its plan per domain
// (positions, lenders, what each server replicates from afterwards, the settings carried over), its forecast and
// advice (a candidate delayed on purpose, or stalled), as the switchover's own dry run shows them; for a failover
// drill the master it would fence, the replica it would promote, and each replica that cannot take over and why.
import { useEffect, useState } from "react";
import type { Schemas } from "../../api/client";
import { useDrillDryRun } from "../../api/drills";
import { useOperation } from "../../api/queries";
import { ErrorMessage } from "../../components/QueryState";
import { MoveReport } from "../operations/CatchUp";
import { Checklist } from "../operations/Checklist";
import { hasEnded, preflightChecks } from "../operations/operationFacts";
import { SwitchPlan } from "../operations/SwitchPlan";
import { FailoverPreflight } from "./FailoverPreflight";

export function DrillPreview({ clusterId, body, planKey }: {
  clusterId: number;
  /** The run-now body (null: the plan is incomplete). */
  body: Schemas["DrillRunCreate"] | null;
  /** Changes when the plan does: an older preview no longer applies. */
  planKey: string;
}) {
  const dryRun = useDrillDryRun(clusterId);
  const [operationId, setOperationId] = useState<number | null>(null);
  const operation = useOperation(clusterId, operationId);
  useEffect(() => setOperationId(null), [planKey]);
  const ended = operation.data && hasEnded(operation.data) ? operation.data : null;
  return (
    <div className="drill-preview">
      <button type="button" disabled={body === null || dryRun.isPending}
        onClick={() => body && dryRun.mutate(body, { onSuccess: (op) => setOperationId(op.id) })}>
        Preview (dry run)
      </button>
      {dryRun.error ? <ErrorMessage error={dryRun.error} /> : null}
      {operationId !== null && !ended ? <p role="status">Running the preflight…</p> : null}
      {ended ? (
        <section className="preview" aria-label="Drill preview">
          <h4>Preflight (nothing was changed)</h4>
          <Checklist checks={preflightChecks(ended)} />
          {ended.state === "succeeded" ? null : (
            <p role="alert" className="error">✕ The drill would be refused{ended.error ? `: ${ended.error}` : ""}.</p>
          )}
          <SwitchPlan operation={ended} />
          {ended.type === "drill" ? <FailoverPreflight operation={ended} /> : null}
          {ended.type === "switchover" ? <MoveReport figures={ended.result} /> : null}
        </section>
      ) : null}
    </div>
  );
}

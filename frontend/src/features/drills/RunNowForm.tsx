// Run a drill now (a real switchover, or a failover of the live master, under a canary workload, verified): with a
// schedule's plan or one given here, previewed first if wished (a dry run: the preflight and, for a switchover, the
// plan per domain; nothing changed), after typing the cluster's name; then its state, figures and the operation's
// steps, live.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useDrillRun, useRunDrill, type DrillSchedule } from "../../api/drills";
import { useOperation } from "../../api/queries";
import { ErrorMessage } from "../../components/QueryState";
import { StepProgress } from "../operations/StepProgress";
import { TypedConfirmation } from "../operations/TypedConfirmation";
import { DrillOutcome } from "./DrillOutcome";
import { DrillPreview } from "./DrillPreview";
import { EMPTY_PLAN, PlanFields, planBody, type Plan } from "./PlanFields";

interface Props {
  clusterId: number;
  clusterName: string;
  schedules: DrillSchedule[];
  nodes: Schemas["TopologyNode"][];
  serverName: (id: number) => string;
}

export function RunNowForm({ clusterId, clusterName, schedules, nodes, serverName }: Props) {
  const runDrill = useRunDrill(clusterId);
  const [source, setSource] = useState("plan");
  const [plan, setPlan] = useState<Plan>(EMPTY_PLAN);
  const [typed, setTyped] = useState("");
  const [runId, setRunId] = useState<number | null>(null);
  const run = useDrillRun(clusterId, runId);
  const operation = useOperation(clusterId, run.data?.operation_id ?? null);
  const body: Schemas["DrillRunCreate"] | null = source === "plan" ? planBody(plan) : { ...planBody(EMPTY_PLAN)!, schedule_id: Number(source) };
  const ended = run.data?.state === "passed" || run.data?.state === "failed" || run.data?.state === "interrupted";

  const start = () => {
    if (body === null) return;
    runDrill.mutate(body, { onSuccess: (created) => setRunId(created.id) });
  };

  return (
    <fieldset className="guarded" aria-label="Run a drill now">
      <legend>Run a drill now</legend>
      <p className="small">
        A drill is a real switchover — or a real failover of the live master, which then rejoins — under a canary
        workload, then verified (canaries everywhere, checksums equal, nothing lost or duplicated).
      </p>
      <label>
        Plan{" "}
        <select value={source} onChange={(e) => setSource(e.target.value)} disabled={runId !== null && !ended}>
          <option value="plan">the plan below</option>
          {schedules.map((s) => (
            <option key={s.id} value={String(s.id)}>
              schedule {s.name}
            </option>
          ))}
        </select>
      </label>
      {source === "plan" ? <PlanFields plan={plan} onChange={setPlan} nodes={nodes} /> : null}
      <DrillPreview clusterId={clusterId} body={body} planKey={`${source}:${JSON.stringify(plan)}`} />
      {runId === null || ended ? (
        <div className="confirm-run">
          <TypedConfirmation expected={clusterName} value={typed} onChange={setTyped} />
          <button type="button" className="danger" disabled={body === null || typed !== clusterName || runDrill.isPending} onClick={start}>
            Run drill now
          </button>
        </div>
      ) : null}
      {runDrill.error ? <ErrorMessage error={runDrill.error} /> : null}
      {run.data ? <DrillOutcome run={run.data} /> : null}
      {operation.data ? <StepProgress operation={operation.data} serverName={serverName} /> : null}
    </fieldset>
  );
}

// The fields of a drill plan (shared by schedules and run-now): what it rehearses (a switchover, or a failover of the
// live master with its RTO and RPO), which source's role it moves (asked only on a cluster of several masters or with
// intermediate masters), which candidate (rotation or a fixed server), whether to switch back, and a webhook for
// failures.
import { useId } from "react";
import type { Schemas } from "../../api/client";
import { ServerPicker } from "../operations/ServerPicker";

export type DrillKind = Schemas["DrillRunCreate"]["kind"];

export interface Plan {
  kind: DrillKind;
  candidate_strategy: "fixed" | "rotation";
  candidate_registered_server_id: number | null;
  switch_back: boolean;
  webhook_url: string;
  source_registered_server_id: number | null;
}

export const EMPTY_PLAN: Plan = {
  kind: "switchover",
  candidate_strategy: "rotation",
  candidate_registered_server_id: null,
  switch_back: true,
  webhook_url: "",
  source_registered_server_id: null,
};

/** The plan as the API takes it (a fixed strategy needs a candidate: null when it has none). */
export type PlanBody = Omit<Schemas["DrillRunCreate"], "schedule_id">;

export function planBody(plan: Plan): PlanBody | null {
  if (plan.candidate_strategy === "fixed" && plan.candidate_registered_server_id === null) return null;
  return {
    kind: plan.kind,
    candidate_strategy: plan.candidate_strategy,
    candidate_registered_server_id: plan.candidate_strategy === "fixed" ? plan.candidate_registered_server_id : null,
    switch_back: plan.switch_back,
    webhook_url: plan.webhook_url.trim() || null,
    // Named only where there is a choice: a single master's plan sends what it always did.
    ...(plan.source_registered_server_id !== null ? { source_registered_server_id: plan.source_registered_server_id } : {}),
  };
}

export function PlanFields({ plan, onChange, nodes }: { plan: Plan; onChange: (plan: Plan) => void; nodes: Schemas["TopologyNode"][] }) {
  const id = useId();
  const sources = nodes.filter((n) => n.role === "master" || n.role === "intermediate");
  return (
    <>
      <fieldset className="inline">
        <legend>Kind</legend>
        <label>
          <input type="radio" name={`${id}-kind`} checked={plan.kind === "switchover"} onChange={() => onChange({ ...plan, kind: "switchover" })} />{" "}
          switchover (planned: the master hands over)
        </label>
        <label>
          <input type="radio" name={`${id}-kind`} checked={plan.kind === "failover"} onChange={() => onChange({ ...plan, kind: "failover" })} />{" "}
          failover (the master fenced as if lost, then rejoined)
        </label>
      </fieldset>
      {plan.kind === "failover" ? (
        <p className="small">
          The master is fenced alive — drained on the proxies, read-only, never killed — and a replica that keeps every
          domain is promoted by the failover's moves; RTO (fence → new master writable) and RPO (acknowledged canaries
          missing on the new master) are measured, then the old master rejoins as its replica.
        </p>
      ) : null}
      {sources.length > 1 ? (
        <ServerPicker label="Source" nodes={sources} value={plan.source_registered_server_id} onChange={(v) => onChange({ ...plan, source_registered_server_id: v })} />
      ) : null}
      <fieldset className="inline">
        <legend>Candidate</legend>
        <label>
          <input type="radio" name={`${id}-strategy`} checked={plan.candidate_strategy === "rotation"} onChange={() => onChange({ ...plan, candidate_strategy: "rotation" })} />{" "}
          rotation (the next eligible replica in turn)
        </label>
        <label>
          <input type="radio" name={`${id}-strategy`} checked={plan.candidate_strategy === "fixed"} onChange={() => onChange({ ...plan, candidate_strategy: "fixed" })} />{" "}
          a fixed server
        </label>
      </fieldset>
      {plan.candidate_strategy === "fixed" ? (
        <ServerPicker label="Candidate" nodes={nodes} value={plan.candidate_registered_server_id} onChange={(v) => onChange({ ...plan, candidate_registered_server_id: v })} />
      ) : null}
      <label>
        <input type="checkbox" checked={plan.switch_back} onChange={(e) => onChange({ ...plan, switch_back: e.target.checked })} /> switch back
        to the original master afterwards{plan.kind === "failover" ? " (once it rejoined)" : ""}
      </label>
      <label>
        Failure webhook{" "}
        <input type="url" value={plan.webhook_url} onChange={(e) => onChange({ ...plan, webhook_url: e.target.value })} placeholder="https://…" />
      </label>
    </>
  );
}

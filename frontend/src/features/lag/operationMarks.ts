// Which operations to mark on the lag charts (a pure function): those that really ran (no dry runs) and overlap
// the range, each from its start to its end (a running one to the range's end), labelled with its type and id —
// so a lag spike reads against the switchover, failover or drill that caused it.
import type { Schemas } from "../../api/client";

type Operation = Schemas["OperationRead"];

export interface OperationMark {
  id: number;
  /** "switchover #12" */
  label: string;
  type: string;
  state: Operation["state"];
  startMs: number;
  endMs: number;
}

export function operationMarks(operations: readonly Operation[], sinceMs: number, untilMs: number): OperationMark[] {
  return operations
    .filter((op) => !op.dry_run)
    .map((op) => {
      const startMs = Date.parse(op.started_at ?? op.created_at);
      const endMs = op.finished_at ? Date.parse(op.finished_at) : untilMs;
      return { id: op.id, label: `${op.type.replace(/_/g, " ")} #${op.id}`, type: op.type, state: op.state, startMs, endMs };
    })
    .filter((mark) => mark.endMs >= sinceMs && mark.startMs <= untilMs)
    .map((mark) => ({ ...mark, startMs: Math.max(mark.startMs, sinceMs), endMs: Math.min(Math.max(mark.endMs, mark.startMs), untilMs) }))
    .sort((a, b) => a.startMs - b.startMs);
}

// Reading an operation record (pure functions): whether it has ended, its preflight checklist (named checks for
// a switchover, else the preflight step), and its figures (the unavailability window, old and new master). An
// operation's `result` is its type's (the API's discriminated union on `type`), so each figure is read from the types
// that have it.
import type { Schemas } from "../../api/client";
import type { Tone } from "../../components/StatusBadge";

export type Operation = Schemas["OperationRead"];
export type OperationType = Operation["type"];
/** The operation of one type, with that type's parameters and result. */
export type OperationOf<T extends OperationType> = Extract<Operation, { type: T }>;
/** The operations that move a source's role: they name the old and new master and may carry named checks. */
export type RoleMove = OperationOf<"switchover" | "failover" | "drill">;

export function isRoleMove(operation: Operation): operation is RoleMove {
  return operation.type === "switchover" || operation.type === "failover" || operation.type === "drill";
}

/** The old and new master a switchover, failover or drill names (null where it named none yet). */
export function masters(operation: Operation): { oldMaster: number | null; newMaster: number | null } {
  const result = isRoleMove(operation) ? operation.result : null;
  return { oldMaster: result?.old_master_registered_server_id ?? null, newMaster: result?.new_master_registered_server_id ?? null };
}

/** The write-unavailability window of a switchover (or a drill's switch): read-only on → the new master writable. */
export function unavailableSeconds(operation: Operation): number | null {
  return operation.type === "switchover" || operation.type === "drill" ? (operation.result?.unavailable_s ?? null) : null;
}

/** How long writes had nowhere to go: a switchover's unavailability window, a failover's time to promotion. */
export function writeWindowSeconds(operation: Operation): number | null {
  return operation.type === "failover" ? (operation.result?.promoted_after_s ?? null) : unavailableSeconds(operation);
}

export interface CheckItem {
  name: string;
  passed: boolean | null;
  detail: string;
}

export function hasEnded(operation: Pick<Operation, "state"> | undefined): boolean {
  return operation != null && operation.state !== "pending" && operation.state !== "running";
}

export function stateTone(state: string): Tone {
  switch (state) {
    case "succeeded":
    case "passed":
      return "ok";
    case "failed":
    case "interrupted":
      return "bad";
    case "undone":
    case "skipped":
      return "warn";
    case "running":
    case "pending":
      return "info";
    default:
      return "muted";
  }
}

export function stateSymbol(state: string): string {
  return (
    { succeeded: "✓", passed: "✓", failed: "✕", undone: "↺", interrupted: "⚡", skipped: "–", running: "…", pending: "…" }[
      state
    ] ?? "?"
  );
}

/** The preflight as a checklist: the named checks when the operation reports them, else its preflight step. */
export function preflightChecks(operation: Operation): CheckItem[] {
  const named = isRoleMove(operation) ? operation.result?.checks : null;
  if (named) return named.map((check) => ({ name: check.name, passed: check.passed, detail: check.detail }));
  // No named checks: the preflight step, or (an operation without one, e.g. failover) every step of the dry run.
  const preflight = operation.steps.filter((s) => s.name === "preflight");
  return (preflight.length > 0 ? preflight : operation.steps).map((step) => ({
    name: step.name,
    passed: step.state === "passed" ? true : step.state === "failed" ? false : null,
    detail: readable(step.detail),
  }));
}

/** Whether the dry run found the operation may go ahead. */
export function previewPassed(operation: Operation): boolean {
  return operation.state === "succeeded" && preflightChecks(operation).every((c) => c.passed !== false);
}

/** A step's detail in one line; a list of checks becomes "11 checks passed" or names the failed ones. */
export function stepDetail(detail: unknown): string {
  if (detail && typeof detail === "object" && "checks" in detail && Array.isArray(detail.checks)) {
    const checks = detail.checks as { name?: unknown; passed?: unknown }[];
    const failed = checks.filter((c) => c.passed === false).map((c) => String(c.name));
    return failed.length === 0
      ? `${checks.length} checks passed`
      : `${failed.length} of ${checks.length} checks failed: ${failed.join(", ")}`;
  }
  return readable(detail);
}

/** A step's detail in words: `key: value` pairs joined by " · ", lists by ", ", an empty list as "none". */
function readable(value: unknown, depth = 0): string {
  if (value == null) return "";
  if (typeof value !== "object") return String(value);
  if (depth > 1) return JSON.stringify(value);
  if (Array.isArray(value)) return value.length === 0 ? "none" : value.map((v) => readable(v, depth + 1)).join(", ");
  return Object.entries(value)
    .map(([key, v]) => `${key}: ${readable(v, depth + 1)}`)
    .join(" · ");
}

/** Why an operation did not succeed, typed by the API (`result.failure`); its `error` says it in words. */
export type Failure = Schemas["Failure"];

/** The typed failure of an operation, when it recorded one (every type's result may carry it). */
export function failureOf(operation: Operation): Failure | null {
  return operation.result?.failure ?? null;
}

const FAILURE_KINDS: Record<Failure["kind"], string> = {
  refused: "Refused before any change",
  step_failed: "A step's own check failed",
  server_error: "A server answered with an error",
  timed_out: "Ran past its time bound",
  lock_lost: "Lost the cluster's operation lock",
  shutdown: "The API instance running it shut down",
  interrupted: "Its API instance stopped; a reconcile settled its servers",
  internal: "An unexpected error",
  cancelled: "Cancelled by an operator while it ran",
};

/** What an operator needs from a typed failure: what kind, and whether the servers were left changed (and how). */
export function failureWords(failure: Failure): { kind: string; changed: string; left: string[] } {
  const compensation =
    failure.compensation === "undone"
      ? " (what it had changed was put back)"
      : failure.compensation === "rolled_forward"
        ? " (past its point of no return: the move was completed instead of undone)"
        : "";
  const changed =
    failure.changed === false
      ? `Nothing was left changed${compensation}.`
      : failure.changed === true
        ? `Servers were left changed${compensation}: check what is listed.`
        : `Whether servers were left changed cannot be told${compensation}: check the cluster.`;
  return { kind: FAILURE_KINDS[failure.kind], changed, left: failure.left ?? [] };
}

// Reading an operation record (pure functions): whether it has ended, its preflight checklist (named checks for
// a switchover, else the preflight step), and its figures (the unavailability window, old and new master).
import type { Schemas } from "../../api/client";
import type { Tone } from "../../components/StatusBadge";

export type Operation = Schemas["OperationRead"];

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
  const raw = operation.result?.checks;
  if (Array.isArray(raw)) {
    return raw.map((check: { name?: unknown; passed?: unknown; detail?: unknown }) => ({
      name: String(check.name ?? "check"),
      passed: typeof check.passed === "boolean" ? check.passed : null,
      detail: readable(check.detail),
    }));
  }
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

export function numberResult(operation: Operation, key: string): number | null {
  const value = operation.result?.[key];
  return typeof value === "number" ? value : null;
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

// Tests of reading operation records: the checklist, whether a preview passed, ended states.
import { describe, expect, it } from "vitest";
import { operation } from "../../test/fixtures";
import { failureOf, failureWords, hasEnded, preflightChecks, previewPassed, stepDetail } from "./operationFacts";

const op: typeof operation = (over) => operation({ state: "succeeded", ...over });

describe("preflightChecks", () => {
  it("lists a switchover's named checks", () => {
    const checks = preflightChecks(op({ result: { checks: [{ name: "candidate_healthy", passed: true, detail: "b ok" }, { name: "lag", passed: false, detail: "too far" }] } }));
    expect(checks).toEqual([
      { name: "candidate_healthy", passed: true, detail: "b ok" },
      { name: "lag", passed: false, detail: "too far" },
    ]);
    expect(previewPassed(op({ result: { checks: [{ name: "x", passed: false, detail: "" }] } }))).toBe(false);
  });

  it("falls back on the preflight step", () => {
    const operation = op({ type: "read_only", steps: [{ name: "preflight", state: "passed", started_at: "2025-01-01T00:00:00Z", detail: "b read_only=false" }] });
    expect(preflightChecks(operation)).toEqual([{ name: "preflight", passed: true, detail: "b read_only=false" }]);
    expect(previewPassed(operation)).toBe(true);
    expect(previewPassed({ ...operation, state: "failed" })).toBe(false);
  });
});

describe("hasEnded", () => {
  it("is false while pending or running", () => {
    expect(hasEnded(op({ state: "running" }))).toBe(false);
    expect(hasEnded(op({ state: "undone" }))).toBe(true);
    expect(hasEnded(undefined)).toBe(false);
  });
});

describe("stepDetail", () => {
  it("sums up a list of checks, naming the failed ones", () => {
    expect(stepDetail({ checks: [{ name: "a", passed: true }, { name: "b", passed: true }] })).toBe("2 checks passed");
    expect(stepDetail({ checks: [{ name: "a", passed: true }, { name: "lag", passed: false }] })).toBe("1 of 2 checks failed: lag");
    expect(stepDetail("text")).toBe("text");
    expect(stepDetail({ repointed: ["c", "d"] })).toBe("repointed: c, d");
    expect(stepDetail({ position: "0-1-5,1-1-9", problems: [] })).toBe("position: 0-1-5,1-1-9 · problems: none");
    expect(stepDetail({ "0": "0-1-1", "1": "1-1-49" })).toBe("0: 0-1-1 · 1: 1-1-49");
    expect(stepDetail({ deep: { a: { b: 1 } } })).toBe('deep: a: {"b":1}');
  });
});

describe("failureWords", () => {
  it("says a refusal changed nothing", () => {
    const failed = op({ state: "failed", error: "candidate_healthy failed", result: { failure: { kind: "refused", changed: false, left: [] } } });
    const failure = failureOf(failed);
    expect(failure).not.toBeNull();
    expect(failureWords(failure!)).toEqual({ kind: "Refused before any change", changed: "Nothing was left changed.", left: [] });
  });

  it("says what an undo put back, and what a failure left changed", () => {
    expect(failureWords({ kind: "step_failed", changed: false, left: [], compensation: "undone" }).changed).toBe(
      "Nothing was left changed (what it had changed was put back).",
    );
    const left = failureWords({ kind: "timed_out", changed: true, left: ["b is still read-only"], compensation: null });
    expect(left).toEqual({
      kind: "Ran past its time bound",
      changed: "Servers were left changed: check what is listed.",
      left: ["b is still read-only"],
    });
  });

  it("says when it cannot tell, and a roll forward", () => {
    const words = failureWords({ kind: "lock_lost", changed: null, left: [], compensation: "rolled_forward" });
    expect(words.changed).toBe(
      "Whether servers were left changed cannot be told (past its point of no return: the move was completed instead of undone): check the cluster.",
    );
  });

  it("says an interrupted operation was settled by a reconcile, and how", () => {
    const words = failureWords({ kind: "interrupted", changed: true, left: [], compensation: "rolled_forward" });
    expect(words.kind).toBe("Its API instance stopped; a reconcile settled its servers");
    expect(words.changed).toBe(
      "Servers were left changed (past its point of no return: the move was completed instead of undone): check what is listed.",
    );
  });

  it("is nothing for an operation without a typed failure", () => {
    expect(failureOf(op({ result: {} }))).toBeNull();
    expect(failureOf(op({ result: null }))).toBeNull();
  });
});

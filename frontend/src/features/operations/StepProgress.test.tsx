// An operation's outcome as StepProgress shows it: a failed run's error with its typed failure (the kind in words,
// whether servers were left changed, and what), and a succeeded switchover's new master and window.
import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { operation, step } from "../../test/fixtures";
import { StepProgress } from "./StepProgress";

const name = (id: number) => `server ${id}`;

describe("StepProgress", () => {
  it("shows a failed run's typed failure under its error: the kind, what was left changed and what", () => {
    const failed = operation({
      state: "failed",
      dry_run: false,
      error: "verify failed: c does not replicate from b",
      steps: [step("verify", "failed")],
      result: {
        failure: { kind: "step_failed", changed: true, left: ["c replicates from nothing"], compensation: "rolled_forward" },
      },
    });
    render(<StepProgress operation={failed} serverName={name} />);
    expect(screen.getByRole("alert").textContent).toBe("✕ verify failed: c does not replicate from b");
    const failure = screen.getByLabelText("Failure");
    expect(failure.textContent).toContain(
      "A step's own check failed. Servers were left changed (past its point of no return: the move was completed instead of undone): check what is listed.",
    );
    expect(within(failure).getAllByRole("listitem").map((li) => li.textContent)).toEqual(["c replicates from nothing"]);
    expect(screen.queryByRole("status")).toBeNull();
  });

  it("says a refusal left nothing changed, and lists nothing", () => {
    const refused = operation({
      state: "failed",
      error: "preflight: candidate_healthy failed",
      result: { failure: { kind: "refused", changed: false, left: [], compensation: null } },
    });
    render(<StepProgress operation={refused} serverName={name} />);
    const failure = screen.getByLabelText("Failure");
    expect(failure.textContent).toContain("Refused before any change. Nothing was left changed.");
    expect(within(failure).queryByRole("list")).toBeNull();
  });

  it("shows no failure for a succeeded switchover, but its new master and window", () => {
    const done = operation({
      state: "succeeded",
      dry_run: false,
      steps: [step("promote_candidate", "passed")],
      result: { old_master_registered_server_id: 1, new_master_registered_server_id: 2, unavailable_s: 0.25 },
    });
    render(<StepProgress operation={done} serverName={name} />);
    expect(screen.queryByLabelText("Failure")).toBeNull();
    expect(screen.getByRole("status").textContent).toContain("✓ Done. server 2 is the master (was server 1).");
  });
});

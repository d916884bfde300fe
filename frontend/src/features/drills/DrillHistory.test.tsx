// A drill's report of its switches on a busy cluster: the history opens, per run, each switch's catch-up before the
// window (the load it ran under: rates per domain, how far behind, the predicted window against the budget) and its
// window's steps with their shares; the outcome shown after a run says the same; a run that recorded none shows none.
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { DrillHistory } from "./DrillHistory";
import { DrillOutcome } from "./DrillOutcome";

const switchFigures = (waited: number, commits: number, steps: Record<string, number>, unavailable: number) => ({
  unavailable_s: unavailable, catch_up_s: 0.003, position: "1-1-900",
  catch_up_phase: {
    waited_s: waited, max_window_s: 10, predicted_catch_up_s: 0.004, behind: 6,
    rates: [{ domain: 1, behind: 6, master_commits_per_s: commits, candidate_applies_per_s: 1650 }],
  },
  window_steps: steps,
});

const run = (over: Partial<Schemas["DrillRunRead"]>): Schemas["DrillRunRead"] => ({
  id: 5, cluster_id: 1, schedule_id: null, operation_id: 12, state: "passed", passed: true, requester: "ops", kind: "switchover",
  reasons: [], rto_s: 0.04, catch_up_s: 0.003, started_at: "2026-11-21T10:00:00Z", finished_at: "2026-11-21T10:00:09Z",
  details: {
    switchover: switchFigures(1.5, 1700, { old_master_read_only: 0.01, wait_in_flight_commits: 0.002, candidate_catch_up: 0.008, promote_candidate: 0.02 }, 0.04),
    switch_back: switchFigures(0.25, 1600, { old_master_read_only: 0.005, wait_in_flight_commits: 0.001, candidate_catch_up: 0.004, promote_candidate: 0.01 }, 0.02),
  },
  ...over,
});

const cells = (row: HTMLElement) => [...row.querySelectorAll("th, td")].map((c) => c.textContent);

describe("a drill's switches in its report", () => {
  it("opens each switch's catch-up phase and window steps in the history", async () => {
    const user = userEvent.setup();
    render(<DrillHistory runs={[run({}), run({ id: 6, details: {} })]} schedules={[]} />);
    // Only the run that recorded them offers them.
    expect(screen.getAllByText("catch-up and window")).toHaveLength(1);
    await user.click(screen.getByText("catch-up and window"));

    const there = screen.getByRole("region", { name: "Switch" });
    const phase = within(there).getByRole("region", { name: "Catch-up before the window" });
    expect(phase.textContent).toContain("Waited 1.500 s · 6 behind · predicted window ~4.0 ms · budget 10 s");
    const rates = within(phase).getByRole("table", { name: "Catch-up before the window: rates per domain" });
    expect(cells(within(rates).getAllByRole("row")[1]!)).toEqual(["1", "1,700", "1,650", "6"]);
    const steps = within(there).getByRole("table", { name: "Window steps" });
    expect(within(steps).getByText("Writes unavailable for 40.0 ms")).toBeTruthy();
    expect(within(steps).getAllByRole("row").slice(1).map(cells)).toEqual([
      ["Old master read only", "10.0 ms", "25%"],
      ["Wait in flight commits", "2.0 ms", "5%"],
      ["Candidate catch up", "8.0 ms", "20%"],
      ["Promote candidate", "20.0 ms", "50%"],
    ]);

    const back = screen.getByRole("region", { name: "Switch back" });
    expect(within(back).getByRole("region", { name: "Catch-up before the window" }).textContent).toContain(
      "Waited 250.0 ms · 6 behind",
    );
    expect(within(within(back).getByRole("table", { name: "Window steps" })).getByText("Writes unavailable for 20.0 ms")).toBeTruthy();
  }, 30_000); // a bound for a loaded machine, not an expectation

  it("says the same in the outcome shown after a run, and nothing for a run without them", () => {
    const { unmount } = render(<DrillOutcome run={run({})} />);
    expect(screen.getByRole("region", { name: "Switch" })).toBeTruthy();
    expect(screen.getByRole("region", { name: "Switch back" })).toBeTruthy();
    expect(screen.getAllByRole("table", { name: "Window steps" })).toHaveLength(2);
    unmount();
    render(<DrillOutcome run={run({ details: { switchover: { unavailable_s: 0.04 } } })} />);
    expect(screen.queryByRole("region", { name: "Switch" })).toBeNull();
    expect(screen.queryByRole("table", { name: "Window steps" })).toBeNull();
  });
});

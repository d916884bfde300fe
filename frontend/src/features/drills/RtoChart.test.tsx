// The drill history chart: one point per finished run with its pass/fail mark, RTO and catch-up in words.
import { render, screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { DrillRun } from "../../api/drills";
import { RtoChart } from "./RtoChart";

const run = (over: Partial<DrillRun>): DrillRun =>
  ({
    id: 1, cluster_id: 1, schedule_id: null, requester: "ops", state: "passed", operation_id: null, started_at: "2025-01-01T00:00:00Z",
    finished_at: "2025-01-01T00:01:00Z", rto_s: 0.2, catch_up_s: 0.05, reasons: [], details: {}, plan: {}, ...over,
  }) as DrillRun;

describe("RtoChart", () => {
  it("marks each finished drill passed or failed", async () => {
    render(
      <RtoChart
        runs={[
          run({ id: 3, state: "running", started_at: "2025-01-03T00:00:00Z", rto_s: null }),
          run({ id: 2, state: "failed", started_at: "2025-01-02T00:00:00Z", rto_s: null, catch_up_s: null }),
          run({ id: 1 }),
        ]}
      />,
    );
    const figure = screen.getByRole("figure", { name: "RTO over time" });
    expect(figure.getAttribute("data-points")).toBe("2");
    expect(figure.textContent).toContain("2 drills: 1 passed, 1 failed");
    await waitFor(() => expect(figure.querySelectorAll(".outcome-mark")).toHaveLength(2));
    const marks = [...figure.querySelectorAll(".outcome-mark")];
    expect(marks.map((m) => m.getAttribute("data-state"))).toEqual(["passed", "failed"]);
    expect(marks[0]!.querySelector("title")!.textContent).toMatch(/^drill #1 passed at .*: RTO 200\.0 ms, writer window —, catch-up 50\.0 ms$/);
    expect(marks[1]!.classList.contains("outcome-failed")).toBe(true);
    expect(figure.textContent).toMatch(/time \((UTC|.+\(GMT[+-]\d+(:\d\d)?\))\)/); // the axis names its time zone
  });

  it("counts one drill in the singular", () => {
    render(<RtoChart runs={[run({ id: 1 })]} />);
    expect(screen.getByRole("figure", { name: "RTO over time" }).textContent).toContain("1 drill: 1 passed");
  });

  it("says when no drill has finished", () => {
    render(<RtoChart runs={[run({ state: "running" })]} />);
    expect(screen.getByText("No drill has finished yet.")).toBeTruthy();
  });
});

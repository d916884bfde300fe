// A switchover on a busy cluster through the UI against a fake backend: the max window typed in the form is sent,
// exactly, with the preview and the run; the preview shows the forecast (rates per domain, predicted window, budget)
// and the advice; the running switchover shows its catch-up before the window as it waits (behind, rates, predicted
// window, waited / bound); the finished one its catch-up phase and each window step's share. A max window out of
// bounds holds the preview back.
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { CLUSTER, TOPOLOGY, operation, step } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { OperationsView } from "./OperationsView";

const CHECKS = [{ name: "candidate_healthy", passed: true, detail: "c healthy" }];
const ADVICE =
  "c (server_id 3) applies 1,480 txn/s while a (server_id 1) commits 2,310 txn/s in domain 1: it falls behind while " +
  "this load lasts — raise its parallel apply (ferryctl parallel-apply, or the cluster's catch_up_parallel_workers " +
  "for switchovers and drills)";
const RATE = { domain: 1, behind: 1200, master_commits_per_s: 2310, candidate_applies_per_s: 1480 };
const WAITING = {
  span_s: 2, behind: 1200, predicted_catch_up_s: 0.811, waited_s: 3.5, max_window_s: 30, prepare_timeout_s: 60,
  domains: [{ ...RATE, catch_up_s: 0.811, keeps_up: false }],
};
const WINDOW_STEPS = { old_master_read_only: 0.004, wait_in_flight_commits: 0.001, candidate_catch_up: 0.01, promote_candidate: 0.005 };

function backend() {
  let runReads = 0;
  return mockApi({
    "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
    "POST /api/v1/clusters/1/operations/switchover": (req) =>
      (req.body as { dry_run: boolean }).dry_run
        ? { status: 202, body: operation({ id: 1, dry_run: true }) }
        : { status: 202, body: operation({ id: 2, dry_run: false }) },
    "GET /api/v1/clusters/1/operations/1": () => ({
      body: operation({
        id: 1,
        state: "succeeded",
        steps: [step("preflight", "passed", { checks: CHECKS })],
        result: {
          checks: CHECKS, old_master_registered_server_id: 1, new_master_registered_server_id: 3,
          forecast: { waited_s: 0.5, max_window_s: 30, predicted_catch_up_s: 41.2, behind: 61000, rates: [{ ...RATE, behind: 61000 }] },
          advice: [ADVICE],
        },
      }),
    }),
    "GET /api/v1/clusters/1/operations/2": () => {
      runReads += 1;
      const done = runReads > 1;
      return {
        body: operation({
          id: 2,
          dry_run: false,
          state: done ? "succeeded" : "running",
          steps: done
            ? [step("preflight", "passed"), step("catch_up_before_window", "passed", { ...WAITING, behind: 3, went_on: "predicted catch-up 2 ms: negligible" }),
               step("old_master_read_only", "passed"), step("promote_candidate", "passed")]
            : [step("preflight", "passed"), step("catch_up_before_window", "running", WAITING)],
          result: done
            ? {
                old_master_registered_server_id: 1, new_master_registered_server_id: 3, unavailable_s: 0.02, window_steps: WINDOW_STEPS,
                catch_up_phase: { waited_s: 4.25, max_window_s: 30, predicted_catch_up_s: 0.002, behind: 3, rates: [{ ...RATE, behind: 3 }] },
              }
            : {},
        }),
      };
    },
  });
}

const cells = (row: HTMLElement) => [...row.querySelectorAll("th, td")].map((c) => c.textContent);
/** Bounds, not expectations: a walk through several requests and polls on a loaded machine. */
const WALK_MS = 30_000;
const POLLED_MS = 15_000;

describe("a switchover's catch-up before the window", () => {
  it("sends the max window, previews the forecast and advice, shows the wait and then the window's steps", async () => {
    const { requests } = backend();
    const user = userEvent.setup();
    renderSignedIn(<OperationsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    const form = await screen.findByRole("group", { name: "Switchover" });
    await user.type(within(form).getByLabelText(/Max window/), "30");
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    const dryRun = requests.find((r) => r.method === "POST")!;
    expect(dryRun.body).toEqual({ dry_run: true, candidate_registered_server_id: null, expected_master_registered_server_id: 1, max_window_s: 30 });

    // The forecast: what a switchover now would need, against the budget; and what to do about it.
    const forecast = await within(form).findByRole("region", { name: "Forecast" });
    expect(forecast.textContent).toContain("Measured over 500.0 ms · 61,000 behind · predicted window ~41.200 s · budget 30 s");
    const rates = within(forecast).getByRole("table", { name: "Forecast: rates per domain" });
    expect(cells(within(rates).getAllByRole("row")[1]!)).toEqual(["1", "2,310", "1,480", "61,000"]);
    const advice = within(form).getByRole("region", { name: "Advice" });
    expect(within(advice).getAllByRole("listitem").map((li) => li.textContent)).toEqual([ADVICE]);

    await user.type(within(form).getByLabelText(/Type the cluster name/), CLUSTER.name);
    await user.click(within(form).getByRole("button", { name: "Switch over" }));
    const real = requests.filter((r) => r.method === "POST")[1]!;
    expect(real.body).toEqual({ dry_run: false, candidate_registered_server_id: 3, expected_master_registered_server_id: 1, max_window_s: 30 });

    // While it waits: behind, the predicted window against the budget, the time waited against the bound, the rates.
    const waiting = await within(form).findByLabelText("Catch-up before the window");
    expect(waiting.textContent).toContain("1,200 behind · predicted window ~811.0 ms · budget 30 s · waited 3.500 s of 60 s");
    const row = within(within(waiting).getByRole("table", { name: "Rates per domain" })).getAllByRole("row")[1]!;
    expect(cells(row)).toEqual(["1", "2,310", "1,480 (falls behind)", "1,200"]);

    // Once it moved: the catch-up phase it went on with, and each window step's share of the 20 ms.
    const phase = await within(form).findByRole("region", { name: "Catch-up before the window" }, { timeout: POLLED_MS });
    expect(phase.textContent).toContain("Waited 4.250 s · 3 behind · predicted window ~2.0 ms · budget 30 s");
    expect(within(form).getByText("Went on: predicted catch-up 2 ms: negligible")).toBeTruthy();
    const steps = within(form).getByRole("table", { name: "Window steps" });
    expect(within(steps).getByText("Writes unavailable for 20.0 ms")).toBeTruthy();
    expect(within(steps).getAllByRole("row").slice(1).map(cells)).toEqual([
      ["Old master read only", "4.0 ms", "20%"],
      ["Wait in flight commits", "1.0 ms", "5%"],
      ["Candidate catch up", "10.0 ms", "50%"],
      ["Promote candidate", "5.0 ms", "25%"],
    ]);
  }, WALK_MS);

  it("holds the preview back while the max window is out of bounds", async () => {
    const { requests } = backend();
    const user = userEvent.setup();
    renderSignedIn(<OperationsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    const form = await screen.findByRole("group", { name: "Switchover" });
    const preview = within(form).getByRole("button", { name: "Preview (dry run)" }) as HTMLButtonElement;
    for (const bad of ["0", "3601", "-2"]) {
      await user.clear(within(form).getByLabelText(/Max window/));
      await user.type(within(form).getByLabelText(/Max window/), bad);
      expect(within(form).getByRole("alert").textContent).toBe("The max window is more than 0 and at most 3600 seconds.");
      expect(preview.disabled).toBe(true);
    }
    await user.clear(within(form).getByLabelText(/Max window/));
    expect(preview.disabled).toBe(false);
    await user.click(preview);
    expect(requests.filter((r) => r.method === "POST").map((r) => r.body)).toEqual([
      { dry_run: true, candidate_registered_server_id: null, expected_master_registered_server_id: 1 },
    ]);
  }, WALK_MS);
});

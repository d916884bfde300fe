// The Drills tab against a fake backend: a schedule created with its cron explained before saving (exact POST),
// a drill run now only after the cluster's name is typed (exact POST) and followed to its outcome, and a viewer
// who sees schedules and history but no control.
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { CLUSTER, TOPOLOGY, operation } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { DrillsView } from "./DrillsView";

const SCHEDULE: Schemas["DrillScheduleRead"] = {
  id: 1, cluster_id: 1, name: "weekly", cron: "0 4 * * 0", timezone: "UTC", enabled: true, kind: "switchover", candidate_strategy: "rotation",
  candidate_registered_server_id: null, switch_back: true, webhook_url: null, next_run_at: "2026-11-22T04:00:00Z",
  next_runs: ["2026-11-22T04:00:00Z", "2026-11-29T04:00:00Z"], last_run_at: null, created_at: "2026-11-01T00:00:00Z",
};

const run = (over: Partial<Schemas["DrillRunRead"]>): Schemas["DrillRunRead"] => ({
  id: 5, cluster_id: 1, schedule_id: null, operation_id: null, state: "pending", passed: null, requester: "ops", kind: "switchover",
  reasons: [], rto_s: null, catch_up_s: null, details: {}, started_at: "2026-11-21T10:00:00Z", finished_at: null, ...over,
});

function backend(runs: Schemas["DrillRunRead"][] = []) {
  return mockApi({
    "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    "GET /api/v1/clusters/1/drills/schedules": () => ({ body: [SCHEDULE] }),
    "POST /api/v1/clusters/1/drills/schedules": (req) => ({ status: 201, body: { ...SCHEDULE, id: 2, ...(req.body as object) } }),
    "GET /api/v1/clusters/1/drills/runs": () => ({ body: runs }),
    "POST /api/v1/clusters/1/drills/runs": () => ({ status: 202, body: run({}) }),
    "GET /api/v1/clusters/1/drills/runs/5": () => ({ body: run({ state: "passed", passed: true, rto_s: 0.21, catch_up_s: 0.004 }) }),
  });
}

describe("DrillsView", () => {
  it("explains the cron while typing and creates the schedule with exactly what was entered", async () => {
    const { requests } = backend();
    const user = userEvent.setup();
    renderSignedIn(<DrillsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    await user.click(await screen.findByRole("button", { name: "New schedule" }));
    const form = screen.getByRole("form", { name: "New drill schedule" });
    await user.type(within(form).getByLabelText("Name"), "nightly");
    const cron = within(form).getByLabelText(/^Cron/);
    await user.clear(cron);
    await user.type(cron, "0 3 * *");
    expect(within(form).getByText(/has 4/)).toBeTruthy();
    expect((within(form).getByRole("button", { name: "Create schedule" }) as HTMLButtonElement).disabled).toBe(true);
    await user.type(cron, " *");
    const zone = within(form).getByLabelText("Time zone");
    await user.clear(zone);
    await user.type(zone, "Europe/Berlin");
    expect(within(form).getByText("At 03:00 (Europe/Berlin)")).toBeTruthy();
    expect(within(form).getAllByText(/Europe\/Berlin \(0[12]:00 UTC\)/)).toHaveLength(5);

    await user.click(within(form).getByRole("button", { name: "Create schedule" }));
    const post = requests.find((r) => r.method === "POST")!;
    expect(post.path).toBe("/api/v1/clusters/1/drills/schedules");
    expect(post.body).toEqual({
      name: "nightly", cron: "0 3 * * *", timezone: "Europe/Berlin", enabled: true, kind: "switchover", candidate_strategy: "rotation",
      candidate_registered_server_id: null, switch_back: true, webhook_url: null,
    });
  }, 30_000); // a bound for a loaded machine, not an expectation

  it("runs a drill only after the cluster's name is typed, and shows its outcome", async () => {
    const { requests } = backend();
    const user = userEvent.setup();
    renderSignedIn(<DrillsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    const form = await screen.findByRole("group", { name: "Run a drill now" });
    const button = within(form).getByRole("button", { name: "Run drill now" }) as HTMLButtonElement;
    expect(button.disabled).toBe(true);
    await user.type(within(form).getByLabelText(/Type the cluster name/), CLUSTER.name);
    await user.click(button);
    const post = requests.find((r) => r.method === "POST")!;
    expect(post.path).toBe("/api/v1/clusters/1/drills/runs");
    expect(post.body).toEqual({ kind: "switchover", candidate_strategy: "rotation", candidate_registered_server_id: null, switch_back: true, webhook_url: null });
    expect(await within(form).findByText("passed")).toBeTruthy();
    expect(within(form).getByText(/RTO 210\.0 ms/)).toBeTruthy();
  });

  it("shows a viewer the schedules, a failed drill loudly, and no control", async () => {
    backend([run({ id: 3, state: "failed", passed: false, reasons: ["canary 2-3-9 missing on c"], rto_s: 0.3 })]);
    renderSignedIn(<DrillsView clusterId={1} clusterName={CLUSTER.name} />, { role: "viewer" });
    const schedules = await screen.findByRole("table", { name: "Drill schedules" });
    expect(within(schedules).getByText("At 04:00, only on Sunday (UTC)")).toBeTruthy();
    const history = await screen.findByRole("table", { name: "Drill history" });
    expect(within(history).getByText("FAILED")).toBeTruthy();
    expect(within(history).getByText("canary 2-3-9 missing on c")).toBeTruthy();
    expect(screen.queryByRole("button")).toBeNull();
    expect(screen.queryByRole("group", { name: "Run a drill now" })).toBeNull();
  });

  it("previews a drill: the plan sent as a dry run, then its checks, its plan per domain and its advice, nothing run", async () => {
    const PLAN = {
      source: "a (server_id 1)", candidate: "b (server_id 2)",
      positions: { "a (server_id 1)": { "1": "1-1-40" }, "b (server_id 2)": { "1": "1-1-40" } },
      lenders: {}, afterwards: { "a (server_id 1)": ["(default connection) from b (server_id 2)"] },
      moved: [{ server: "a (server_id 1)", connection: "", master: "b (server_id 2)", settings_from: "as on b (server_id 2)'s (default connection) to a (server_id 1), which is removed", carried: ["heartbeat 30 s"], not_carried: ["delay 30 s"] }],
    };
    const ADVICE = ["b (server_id 2) replicates 30 s behind on purpose (MASTER_DELAY 30): once a (server_id 1) is read-only, …"];
    const CHECKS = [{ name: "candidate_eligible", passed: true, detail: "b (server_id 2) may be promoted" }];
    const { requests } = mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
      "GET /api/v1/clusters/1/drills/schedules": () => ({ body: [] }),
      "GET /api/v1/clusters/1/drills/runs": () => ({ body: [] }),
      "POST /api/v1/clusters/1/drills/dry-run": () => ({ status: 202, body: operation({ id: 12 }) }),
      "GET /api/v1/clusters/1/operations/12": () => ({
        body: operation({ id: 12, state: "succeeded", result: { checks: CHECKS, old_master_registered_server_id: 1, new_master_registered_server_id: 2, plan: PLAN, advice: ADVICE } }),
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<DrillsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    const form = await screen.findByRole("group", { name: "Run a drill now" });
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    const preview = await within(form).findByRole("region", { name: "Drill preview" });
    expect(within(preview).getByText("Plan: b (server_id 2) replaces a (server_id 1)")).toBeTruthy();
    expect(within(preview).getByText("Candidate eligible")).toBeTruthy();
    expect(within(preview).getByRole("table", { name: "Positions per domain before the switchover" })).toBeTruthy();
    const carried = within(preview).getByRole("region", { name: "Settings carried over" });
    expect(carried.textContent).toContain("a (server_id 1) replicates over (default connection) from b (server_id 2) with heartbeat 30 s");
    expect(carried.textContent).toContain("; not carried: delay 30 s");
    expect(within(within(preview).getByRole("region", { name: "Advice" })).getByText(ADVICE[0]!)).toBeTruthy();
    const writes = requests.filter((r) => r.method !== "GET").map((r) => [r.path, r.body]);
    expect(writes).toEqual([
      ["/api/v1/clusters/1/drills/dry-run", { kind: "switchover", candidate_strategy: "rotation", candidate_registered_server_id: null, switch_back: true, webhook_url: null }],
    ]);
  });
});

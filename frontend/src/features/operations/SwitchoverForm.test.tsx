// The guarded switchover through the UI against a fake backend: the dry run's exact request, its checklist, the
// typed confirmation that unlocks the run, the run's exact request (candidate and master pinned from the
// preview, an Idempotency-Key, the bearer token), its live steps and the unavailability window at the end.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { CLUSTER, TOPOLOGY, operation, step } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { TEST_TOKEN, renderSignedIn } from "../../test/render";
import { OperationsView } from "./OperationsView";

const CHECKS = [
  { name: "expected_master", passed: true, detail: "a is the master" },
  { name: "candidate_healthy", passed: true, detail: "c healthy" },
  { name: "candidate_lag", passed: true, detail: "0 transactions behind" },
];

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
        result: { checks: CHECKS, old_master_registered_server_id: 1, new_master_registered_server_id: 3, candidate_chosen_by: "orchestrator" },
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
            ? [step("preflight", "passed"), step("old_master_read_only", "passed"), step("promote_candidate", "passed"), step("verify", "passed")]
            : [step("preflight", "passed"), step("old_master_read_only", "running")],
          result: done ? { old_master_registered_server_id: 1, new_master_registered_server_id: 3, unavailable_s: 0.0123 } : {},
        }),
      };
    },
  });
}

describe("switchover through the UI", () => {
  it("previews, needs the typed cluster name, then sends exactly the previewed switchover", async () => {
    const { requests } = backend();
    const user = userEvent.setup();
    renderSignedIn(<OperationsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });

    const form = await screen.findByRole("group", { name: "Switchover" });
    expect(within(form).queryByRole("button", { name: "Switch over" })).toBeNull();
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));

    const dryRun = requests.find((r) => r.method === "POST")!;
    expect(dryRun.path).toBe("/api/v1/clusters/1/operations/switchover");
    expect(dryRun.body).toEqual({ dry_run: true, candidate_registered_server_id: null, expected_master_registered_server_id: 1 });

    const checklist = await within(form).findByRole("list", { name: "Preflight checks" });
    expect(within(checklist).getAllByText("passed")).toHaveLength(3);
    expect(within(checklist).getByText("Candidate healthy")).toBeTruthy();

    const run = within(form).getByRole("button", { name: "Switch over" }) as HTMLButtonElement;
    expect(run.disabled).toBe(true);
    const confirm = within(form).getByLabelText(/Type the cluster name/);
    await user.type(confirm, "prod-e");
    expect(run.disabled).toBe(true);
    await user.type(confirm, "u");
    expect(run.disabled).toBe(false);
    await user.click(run);

    const posts = requests.filter((r) => r.method === "POST");
    expect(posts).toHaveLength(2);
    const real = posts[1]!;
    expect(real.path).toBe("/api/v1/clusters/1/operations/switchover");
    expect(real.body).toEqual({ dry_run: false, candidate_registered_server_id: 3, expected_master_registered_server_id: 1 });
    expect(real.headers.get("Authorization")).toBe(`Bearer ${TEST_TOKEN}`);
    expect(real.headers.get("Idempotency-Key")).toMatch(/.{8,}/);
    expect(real.headers.get("Idempotency-Key")).not.toBe(dryRun.headers.get("Idempotency-Key"));

    expect(await within(form).findByText("Old master read only")).toBeTruthy();
    const outcome = await within(form).findByText(/Writes were unavailable for 12\.3 ms/, {}, { timeout: 4000 });
    expect(outcome.textContent).toContain("c is the master (was a)");
    expect(within(form).getAllByText("passed").length).toBeGreaterThanOrEqual(4);
    // The finished run shows its result; the preview it ran from is folded to one line, not left above it.
    const result = within(form).getByRole("region", { name: "Result" });
    expect(result.textContent).toContain("c is the master (was a)");
    expect(within(form).queryByRole("list", { name: "Preflight checks" })).toBeNull();
    expect(within(form).queryByRole("heading", { name: "Preflight" })).toBeNull();
    expect(within(form).getByTestId("preview-folded").textContent).toContain("operation 1");
  });

  it("offers no run when the preflight failed", async () => {
    mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
      "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
      "POST /api/v1/clusters/1/operations/switchover": () => ({ status: 202, body: operation({ id: 5 }) }),
      "GET /api/v1/clusters/1/operations/5": () => ({
        body: operation({
          id: 5,
          state: "failed",
          error: "preflight failed, nothing was changed: candidate_lag: 5000 behind",
          result: { checks: [{ name: "candidate_lag", passed: false, detail: "5000 behind" }] },
        }),
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<OperationsView clusterId={1} clusterName={CLUSTER.name} />, { role: "admin" });
    const form = await screen.findByRole("group", { name: "Switchover" });
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    expect(await within(form).findByText("failed")).toBeTruthy();
    expect(within(form).getByRole("alert").textContent).toMatch(/preflight failed/);
    expect(within(form).queryByRole("button", { name: "Switch over" })).toBeNull();
    expect(within(form).queryByLabelText(/Type the cluster name/)).toBeNull();
  });

  it("shows a refusal such as a busy cluster (409) with the API's message", async () => {
    mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
      "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
      "POST /api/v1/clusters/1/operations/switchover": () => ({
        status: 409,
        body: { error: { code: "operation_running", message: "operation 7 (switchover) is running" } },
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<OperationsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    const form = await screen.findByRole("group", { name: "Switchover" });
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    await waitFor(() => expect(within(form).getByRole("alert").textContent).toMatch(/operation 7 \(switchover\) is running.*409/));
  });
});

describe("switchover of an intermediate master (the two-master shape)", () => {
  const node = (id: number, role: "master" | "intermediate" | "replica") => ({
    ...TOPOLOGY.nodes[0]!, registered_server_id: id, name: `s${id}`, label: `s${id} (server_id ${id})`, role, read_only: role !== "master",
  });
  const edge = (linkId: number, replica: number, master: number, connection: string, delay_s = 0) => ({
    ...TOPOLOGY.edges[0]!, link_id: linkId, replica_registered_server_id: replica, master_registered_server_id: master, connection,
    settings: { delay_s, filters: {} },
  });
  const SEED000 = {
    cluster_id: 1,
    nodes: [node(1, "master"), node(2, "master"), node(3, "intermediate"), node(4, "replica"), node(5, "replica")],
    edges: [edge(10, 3, 1, "m1"), edge(11, 3, 2, "m2"), edge(12, 4, 3, "", 30), edge(13, 5, 3, "")],
  };
  const PLAN = {
    source: "server 3 (s3)",
    candidate: "server 5 (s5)",
    positions: { "server 3 (s3)": { "1": "1-1-40", "2": "2-2-17" }, "server 5 (s5)": { "1": "1-1-38", "2": "2-2-17" } },
    lenders: { "domain 1": "server 3 (s3) up to 1-1-40, then server 1 (s1) over 'm1'" },
    afterwards: { "server 5 (s5)": ["'m1' from server 1 (s1)", "'m2' from server 2 (s2)"], "server 3 (s3)": ["(default connection) from server 5 (s5)"] },
    moved: [
      { server: "server 5 (s5)", connection: "m1", master: "server 1 (s1)", settings_from: "as on server 3 (s3)'s 'm1' to server 1 (s1)",
        carried: ["parallel mode conservative", "heartbeat 30 s"], not_carried: ["replicate_ignore_table = app.ignored"] },
      { server: "server 3 (s3)", connection: "", master: "server 5 (s5)", settings_from: "server 5 (s5) reports none for its (default connection) to server 3 (s3), which is removed",
        carried: [], not_carried: [] },
    ],
  };

  it("asks for the source, offers that source's replicas, and shows the plan per domain", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: SEED000 }),
      "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
      "POST /api/v1/clusters/1/operations/switchover": () => ({ status: 202, body: operation({ id: 7 }) }),
      "GET /api/v1/clusters/1/operations/7": () => ({
        body: operation({ id: 7, state: "succeeded", result: { checks: CHECKS, old_master_registered_server_id: 3, new_master_registered_server_id: 5, plan: PLAN } }),
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<OperationsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    const form = await screen.findByRole("group", { name: "Switchover" });
    const preview = within(form).getByRole("button", { name: "Preview (dry run)" }) as HTMLButtonElement;
    expect(preview.disabled).toBe(true);
    await user.selectOptions(within(form).getByLabelText("Source"), "3");
    const newMaster = within(form).getByLabelText(/New master/) as HTMLSelectElement;
    expect([...newMaster.options].map((o) => o.textContent)).toEqual([
      "Best replica (chosen by the orchestrator)",
      "s4 (server_id 4) — healthy, replicates 30 s behind on purpose (never chosen as best)",
      "s5 (server_id 5) — healthy",
    ]);
    await user.selectOptions(newMaster, "5");
    await user.click(preview);
    const dryRun = requests.find((r) => r.method === "POST")!;
    expect(dryRun.body).toEqual({ dry_run: true, candidate_registered_server_id: 5, source_registered_server_id: 3, expected_master_registered_server_id: 3 });
    expect(await within(form).findByText("Plan: server 5 (s5) replaces server 3 (s3)")).toBeTruthy();
    const table = within(form).getByRole("table", { name: "Positions per domain before the switchover" });
    expect(within(table).getByText("1-1-38")).toBeTruthy();
    expect(within(table).getByText("'m1' from server 1 (s1), 'm2' from server 2 (s2)")).toBeTruthy();
    expect(within(table).getByText("(default connection) from server 5 (s5)")).toBeTruthy();
    expect(within(form).getByText("domain 1: server 3 (s3) up to 1-1-40, then server 1 (s1) over 'm1'")).toBeTruthy();
    const carried = within(within(form).getByRole("region", { name: "Settings carried over" })).getAllByRole("listitem");
    expect(carried.map((item) => item.textContent)).toEqual([
      "server 5 (s5) replicates over 'm1' from server 1 (s1) with parallel mode conservative, heartbeat 30 s (as on server 3 (s3)'s " +
        "'m1' to server 1 (s1)); not carried: replicate_ignore_table = app.ignored",
      "server 3 (s3) replicates over (default connection) from server 5 (s5) with the server's defaults (server 5 (s5) reports none " +
        "for its (default connection) to server 3 (s3), which is removed)",
    ]);
  });

  it("has the failover form ask which source is lost and offer only that source's replicas", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: SEED000 }),
      "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
      "POST /api/v1/clusters/1/operations/failover": () => ({ status: 202, body: operation({ id: 8, type: "failover" }) }),
      "GET /api/v1/clusters/1/operations/8": () => ({ body: operation({ id: 8, type: "failover", state: "succeeded" }) }),
    });
    const user = userEvent.setup();
    renderSignedIn(<OperationsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    const form = await screen.findByRole("group", { name: "Failover" });
    await user.selectOptions(within(form).getByLabelText("Lost source"), "1");
    const newMaster = within(form).getByLabelText(/New master/) as HTMLSelectElement;
    expect([...newMaster.options].map((o) => o.textContent)).toEqual(["Most advanced replica", "s3 (server_id 3) — healthy"]);
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    const dryRun = requests.find((r) => r.method === "POST")!;
    expect(dryRun.path).toBe("/api/v1/clusters/1/operations/failover");
    expect(dryRun.body).toEqual({ dry_run: true, candidate_registered_server_id: null, source_registered_server_id: 1 });
  });
});

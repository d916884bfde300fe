// Failover drills in the Drills tab against a fake backend: the form offers the kind and sends it (run now, its
// preview, a new schedule) exactly; the preview names the master fenced, the replica promoted and each replica that
// cannot take over with why, or says loudly why the drill would be refused; the outcome and the history show the
// failover's RTO and its RPO (a loss said loudly, the lost canaries named), a switchover drill no RPO.
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { CLUSTER, TOPOLOGY, operation, step } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { DrillHistory } from "./DrillHistory";
import { DrillsView } from "./DrillsView";

const FIGURES: Schemas["FailoverDrillFigures"] = {
  rto_s: 0.052, writer_rto_s: 0.081, rpo_lost: 0, rpo_checked: 42, catch_up_s: 0.004, lost_canaries: [],
  only_on_old_master: [], rejoined: true,
};

const run = (over: Partial<Schemas["DrillRunRead"]>): Schemas["DrillRunRead"] => ({
  id: 5, cluster_id: 1, schedule_id: null, operation_id: 12, state: "passed", passed: true, requester: "ops",
  kind: "failover", reasons: [], rto_s: 0.052, rpo_lost: 0, catch_up_s: 0.004, failover: FIGURES, details: {},
  started_at: "2026-11-21T10:00:00Z", finished_at: "2026-11-21T10:00:09Z", ...over,
});

const PREFLIGHT = {
  master: "a (server_id 1)", candidate: "b (server_id 2)", domains: [1, 2], checks: [],
  not_candidates: { "c (server_id 3)": "it would lose domain(s) 2: its connection filters them out" },
};

describe("failover drills", () => {
  it("sends the kind chosen, previews the failover and shows its RTO and RPO once run", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
      "GET /api/v1/clusters/1/drills/schedules": () => ({ body: [] }),
      "GET /api/v1/clusters/1/drills/runs": () => ({ body: [] }),
      "POST /api/v1/clusters/1/drills/dry-run": () => ({ status: 202, body: operation({ id: 13, type: "drill" }) }),
      "GET /api/v1/clusters/1/operations/13": () => ({
        body: operation({ id: 13, type: "drill", state: "succeeded", steps: [step("preflight", "passed", PREFLIGHT)], result: { checks: [] } }),
      }),
      "POST /api/v1/clusters/1/drills/runs": () => ({ status: 202, body: run({ state: "pending", passed: null, rto_s: null, rpo_lost: null, failover: null, operation_id: null }) }),
      "GET /api/v1/clusters/1/drills/runs/5": () => ({ body: run({}) }),
    });
    const user = userEvent.setup();
    renderSignedIn(<DrillsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    const form = await screen.findByRole("group", { name: "Run a drill now" });
    expect((within(form).getByRole("radio", { name: /^switchover/ }) as HTMLInputElement).checked).toBe(true);
    await user.click(within(form).getByRole("radio", { name: /^failover/ }));
    expect(within(form).getByText(/fenced alive/)).toBeTruthy();

    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    const preview = await within(form).findByRole("region", { name: "Failover plan" });
    expect(within(preview).getByRole("heading").textContent).toBe("Failover: b (server_id 2) replaces a (server_id 1)");
    expect(preview.textContent).toContain("keeping every domain (1, 2)");
    const others = within(preview).getByRole("list", { name: "Replicas that cannot take over" });
    expect(within(others).getAllByRole("listitem").map((li) => li.textContent)).toEqual([
      "c (server_id 3): it would lose domain(s) 2: its connection filters them out",
    ]);
    expect(within(form).queryByRole("alert")).toBeNull();

    await user.type(within(form).getByLabelText(/Type the cluster name/), CLUSTER.name);
    await user.click(within(form).getByRole("button", { name: "Run drill now" }));
    const plan = { kind: "failover", candidate_strategy: "rotation", candidate_registered_server_id: null, switch_back: true, webhook_url: null };
    const writes = requests.filter((r) => r.method !== "GET").map((r) => [r.path, r.body]);
    expect(writes).toEqual([
      ["/api/v1/clusters/1/drills/dry-run", plan],
      ["/api/v1/clusters/1/drills/runs", plan],
    ]);
    const outcome = await within(form).findByRole("status");
    expect(outcome.textContent).toContain("Failover drill #5: ✓ passed · RTO 52.0 ms · RPO 0 lost");
    const figures = within(outcome).getByRole("region", { name: "Failover figures of drill #5" });
    expect(figures.textContent).toContain("RTO as the canary writer saw it81.0 ms");
    expect(figures.textContent).toContain("RPO0 lost of 42 acknowledged canaries");
    expect(figures.textContent).toContain("Old masterrejoined as a replica");
  }, 30_000); // bounds for a loaded machine, not expectations

  it("says loudly why a failover drill would be refused", async () => {
    const error =
      "the failover drill would be refused: failover drill refused, nothing was changed: no replica of a (server_id 1) " +
      "can take over keeping every domain (1, 2) — b (server_id 2): its promotion rule is must_not";
    mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
      "GET /api/v1/clusters/1/drills/schedules": () => ({ body: [] }),
      "GET /api/v1/clusters/1/drills/runs": () => ({ body: [] }),
      "POST /api/v1/clusters/1/drills/dry-run": () => ({ status: 202, body: operation({ id: 14, type: "drill" }) }),
      "GET /api/v1/clusters/1/operations/14": () => ({
        body: operation({ id: 14, type: "drill", state: "failed", error, steps: [step("preflight", "failed", error)] }),
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<DrillsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    const form = await screen.findByRole("group", { name: "Run a drill now" });
    await user.click(within(form).getByRole("radio", { name: /^failover/ }));
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    const refused = await within(form).findByRole("alert");
    expect(refused.textContent).toBe(`✕ The drill would be refused: ${error}.`);
    expect(within(form).queryByRole("region", { name: "Failover plan" })).toBeNull();
  }, 30_000);

  it("creates a schedule of the failover kind with exactly what was chosen", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
      "GET /api/v1/clusters/1/drills/schedules": () => ({ body: [] }),
      "GET /api/v1/clusters/1/drills/runs": () => ({ body: [] }),
      "POST /api/v1/clusters/1/drills/schedules": () => ({ status: 201, body: {} }),
    });
    const user = userEvent.setup();
    renderSignedIn(<DrillsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    await user.click(await screen.findByRole("button", { name: "New schedule" }));
    const form = screen.getByRole("form", { name: "New drill schedule" });
    await user.type(within(form).getByLabelText("Name"), "failover-weekly");
    await user.click(within(form).getByRole("radio", { name: /^failover/ }));
    await user.click(within(form).getByRole("button", { name: "Create schedule" }));
    const post = requests.find((r) => r.method === "POST")!;
    expect(post.body).toEqual({
      name: "failover-weekly", cron: "30 2 * * 1-5", timezone: "UTC", enabled: true, kind: "failover",
      candidate_strategy: "rotation", candidate_registered_server_id: null, switch_back: true, webhook_url: null,
    });
  }, 30_000);

  it("shows each run's kind, RTO and RPO in the history, a loss loudly with the canaries named", async () => {
    const user = userEvent.setup();
    const lost = run({
      id: 7, state: "failed", passed: false, rpo_lost: 2, reasons: ["RPO: 2 canary write(s) acknowledged by a are not on b"],
      failover: { ...FIGURES, rpo_lost: 2, lost_canaries: ["run7_d1_w40 (1-1-90)", "run7_d2_w40 (2-1-91)"] },
    });
    const switchover = run({ id: 4, kind: "switchover", rto_s: 0.21, rpo_lost: null, failover: null });
    render(<DrillHistory runs={[lost, run({}), switchover]} schedules={[]} />);
    const table = screen.getByRole("table", { name: "Drill history" });
    const headers = within(table).getAllByRole("columnheader").map((h) => h.textContent);
    const column = (name: string) => headers.indexOf(name);
    const rows = within(table).getAllByRole("row").slice(1);
    const cell = (row: HTMLElement, name: string) => row.querySelectorAll("td")[column(name)]!;
    expect(rows.map((row) => [cell(row, "Kind").textContent, cell(row, "RPO").textContent])).toEqual([
      ["failover", "2 lost"],
      ["failover", "0 lost"],
      ["switchover", "—"],
    ]);
    expect(cell(rows[0]!, "RPO").className).toBe("error");
    expect(cell(rows[1]!, "RTO").textContent).toContain("52.0 ms");
    await user.click(within(rows[0]!).getByText("failover figures"));
    const canaries = within(rows[0]!).getByRole("list", { name: "Canaries lost in the failover of drill #7" });
    expect(within(canaries).getAllByRole("listitem").map((li) => li.textContent)).toEqual([
      "run7_d1_w40 (1-1-90)",
      "run7_d2_w40 (2-1-91)",
    ]);
    expect(within(rows[2]!).queryByText("failover figures")).toBeNull();
  }, 30_000);
});

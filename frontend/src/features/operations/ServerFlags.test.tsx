// Server flags against a fake backend: maintenance starts from a form (reason and duration) and shows who set it, why
// and when it ends; ending it and unfencing each ask once, then send exactly one request; the failover suspension
// banner acknowledges through its endpoint.
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { CLUSTER } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { FailoverSuspension, ServerFlags } from "./ServerFlags";

const server = (id: number, name: string, over: object = {}) => ({ id, name, maintenance: false, maintenance_detail: null, fenced: false, fence_reason: null, ...over });
const inAnHour = () => new Date(Date.now() + 3_600_000 - 1000).toISOString();
const inMaintenance = (id: number, name: string) =>
  server(id, name, { maintenance: true, maintenance_detail: { owner: "test-operator", reason: "disk swap", since: null, until: inAnHour() } });

describe("ServerFlags", () => {
  it("puts a server in maintenance with a reason and a duration, then shows who, why and when it ends", async () => {
    let started = false;
    const { requests } = mockApi({
      "GET /api/v1/clusters/1/servers": () => ({ body: [started ? inMaintenance(2, "b") : server(2, "b")] }),
      "PUT /api/v1/clusters/1/servers/2/maintenance": () => {
        started = true;
        return { body: inMaintenance(2, "b") };
      },
    });
    const user = userEvent.setup();
    renderSignedIn(<ServerFlags clusterId={1} />, { role: "operator" });
    const table = await screen.findByRole("table", { name: "Server flags" });
    const rowB = within(table).getByRole("row", { name: /^b / });
    await user.click(within(rowB).getByRole("button", { name: "Start maintenance" }));
    const form = within(rowB).getByRole("form", { name: "Maintenance of b" });
    await user.click(within(form).getByRole("button", { name: "Put b in maintenance" }));
    expect(within(form).getByRole("alert").textContent).toBe("Say why the server goes into maintenance.");
    expect(requests.filter((r) => r.method !== "GET")).toHaveLength(0);

    await user.type(within(form).getByLabelText("Reason"), "disk swap");
    await user.clear(within(form).getByLabelText("For"));
    await user.type(within(form).getByLabelText("For"), "90");
    await user.selectOptions(within(form).getByLabelText("Unit"), "minutes");
    await user.click(within(form).getByRole("button", { name: "Put b in maintenance" }));
    expect(await within(table).findByText(/by test-operator: disk swap · ends in (59|60) min/)).toBeTruthy();
    const writes = requests.filter((r) => r.method !== "GET").map((r) => [r.method, r.path, r.body]);
    expect(writes).toEqual([
      ["PUT", "/api/v1/clusters/1/servers/2/maintenance", { maintenance: true, reason: "disk swap", duration_s: 5400 }],
    ]);
  });

  it("ends a maintenance and unfences another server, each after a second press", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1/servers": () => ({ body: [inMaintenance(2, "b"), server(3, "c", { fenced: true, fence_reason: "replaced by failover 4" })] }),
      "PUT /api/v1/clusters/1/servers/2/maintenance": () => ({ body: server(2, "b") }),
      "POST /api/v1/clusters/1/servers/3/unfence": () => ({ body: server(3, "c") }),
    });
    const user = userEvent.setup();
    renderSignedIn(<ServerFlags clusterId={1} />, { role: "operator" });
    const table = await screen.findByRole("table", { name: "Server flags" });
    expect(within(table).getByText("fenced: replaced by failover 4")).toBeTruthy();

    const rowB = within(table).getByRole("row", { name: /^b / });
    await user.click(within(rowB).getByRole("button", { name: "End maintenance" }));
    expect(requests.filter((r) => r.method !== "GET")).toHaveLength(0);
    await user.click(within(rowB).getByRole("button", { name: "End maintenance of b" }));
    await user.click(within(table).getByRole("button", { name: "Unfence" }));
    await user.click(within(table).getByRole("button", { name: "Unfence c (it stays read-only)" }));

    const writes = requests.filter((r) => r.method !== "GET").map((r) => [r.method, r.path, r.body]);
    expect(writes).toEqual([
      ["PUT", "/api/v1/clusters/1/servers/2/maintenance", { maintenance: false }],
      ["POST", "/api/v1/clusters/1/servers/3/unfence", undefined],
    ]);
  });

  it("shows a maintenance past its end as over, without a request", async () => {
    const ended = server(2, "b", {
      maintenance: true,
      maintenance_detail: { owner: "o", reason: "r", since: null, until: new Date(Date.now() - 1000).toISOString() },
    });
    mockApi({ "GET /api/v1/clusters/1/servers": () => ({ body: [ended] }) });
    renderSignedIn(<ServerFlags clusterId={1} />, { role: "operator" });
    const table = await screen.findByRole("table", { name: "Server flags" });
    const rowB = within(table).getByRole("row", { name: /^b / });
    expect(within(rowB).queryByText("in maintenance")).toBeNull();
    expect(within(rowB).getByRole("button", { name: "Start maintenance" })).toBeTruthy();
  });

  it("acknowledges a suspended automatic failover", async () => {
    const suspended = { ...CLUSTER, auto_failover: true, failover_suspended_at: "2026-11-21T10:00:00Z", last_failover_operation_id: 4 };
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: suspended }),
      "POST /api/v1/clusters/1/failover/acknowledge": () => ({ body: { ...suspended, failover_suspended_at: null } }),
    });
    const user = userEvent.setup();
    renderSignedIn(<FailoverSuspension clusterId={1} />, { role: "operator" });
    expect(await screen.findByText("automatic failover suspended")).toBeTruthy();
    await user.click(screen.getByRole("button", { name: "Acknowledge" }));
    await user.click(screen.getByRole("button", { name: /Acknowledge the failover/ }));
    expect(requests.some((r) => r.method === "POST" && r.path === "/api/v1/clusters/1/failover/acknowledge")).toBe(true);
  });
});

// Server flags against a fake backend: maintenance and unfence each ask once, then send exactly one request;
// the failover suspension banner acknowledges through its endpoint.
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { CLUSTER } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { FailoverSuspension, ServerFlags } from "./ServerFlags";

const server = (id: number, name: string, over: object = {}) => ({ id, name, maintenance: false, fenced: false, fence_reason: null, ...over });

describe("ServerFlags", () => {
  it("puts a server in maintenance and unfences another, each after a second press", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1/servers": () => ({ body: [server(2, "b"), server(3, "c", { fenced: true, fence_reason: "replaced by failover 4" })] }),
      "PUT /api/v1/clusters/1/servers/2/maintenance": () => ({ body: server(2, "b", { maintenance: true }) }),
      "POST /api/v1/clusters/1/servers/3/unfence": () => ({ body: server(3, "c") }),
    });
    const user = userEvent.setup();
    renderSignedIn(<ServerFlags clusterId={1} />, { role: "operator" });
    const table = await screen.findByRole("table", { name: "Server flags" });
    expect(within(table).getByText("fenced: replaced by failover 4")).toBeTruthy();

    const rowB = within(table).getByRole("row", { name: /^b / });
    await user.click(within(rowB).getByRole("button", { name: "Start maintenance" }));
    expect(requests.filter((r) => r.method !== "GET")).toHaveLength(0);
    await user.click(within(rowB).getByRole("button", { name: "Put b in maintenance" }));
    await user.click(within(table).getByRole("button", { name: "Unfence" }));
    await user.click(within(table).getByRole("button", { name: "Unfence c (it stays read-only)" }));

    const writes = requests.filter((r) => r.method !== "GET").map((r) => [r.method, r.path, r.body]);
    expect(writes).toEqual([
      ["PUT", "/api/v1/clusters/1/servers/2/maintenance", { maintenance: true }],
      ["POST", "/api/v1/clusters/1/servers/3/unfence", undefined],
    ]);
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

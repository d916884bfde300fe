// Adding servers from the cluster page against a fake backend: one ferryd server alone (exactly the server's request),
// a MariaDB seed into a cluster with no logins (the logins first, write-only and cleared, then discovery, its notes
// shown), discovery from a registered server with its notes, the servers awaiting an admin's approval (approved by
// an admin), and a viewer who sees none of it.
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { Schemas } from "../../api/client";
import { RequireRole } from "../../auth/RequireRole";
import { CLUSTER } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { ServerAdmin } from "./ServerAdmin";

const server = (id: number, name: string, kind: "ferry" | "mariadb" = "ferry", port = 7301): Schemas["ServerRead"] => ({
  id, cluster_id: 1, name, label: `${name} (server_id ${id})`, kind, host: "10.0.0.5", protocol_port: port,
  admin_port: kind === "ferry" ? port + 100 : port, labels: {}, maintenance: false, promotion_rule: "neutral",
  origin: "registered", fenced: false, fenced_at: null, fence_reason: null, approved: true, approved_by: null,
  approved_at: null, health: "unknown", consecutive_failures: 0,
  last_seen_at: null, last_error: null, reported_server_id: id, read_only: null, version: null, gtid_binlog_pos: null,
  gtid_slave_pos: null, gtid_current_pos: null, created_at: "2025-01-01T00:00:00Z", updated_at: "2025-01-01T00:00:00Z",
});

describe("ServerAdmin", () => {
  it("adds one ferryd server without discovery: exactly the server's request", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "GET /api/v1/clusters/1/servers": () => ({ body: [] }),
      "POST /api/v1/clusters/1/servers": () => ({ status: 201, body: server(4, "db4") }),
    });
    const user = userEvent.setup();
    renderSignedIn(<ServerAdmin clusterId={1} open />, { role: "operator" });
    const form = await screen.findByRole("form", { name: "Add a server" });
    await user.type(within(form).getByLabelText("Server name"), "db4");
    await user.type(within(form).getByLabelText("Host"), "10.0.0.5");
    await user.type(within(form).getByLabelText("Protocol port"), "7301");
    await user.type(within(form).getByLabelText("Admin port"), "7401");
    await user.click(within(form).getByLabelText(/then discover/));
    await user.click(within(form).getByRole("button", { name: "Add server" }));
    expect((await screen.findByRole("status", { name: "Added" })).textContent).toBe("Added db4.");
    const writes = requests.filter((r) => r.method !== "GET").map((r) => [r.method, r.path, r.body]);
    expect(writes).toEqual([
      ["POST", "/api/v1/clusters/1/servers",
        { kind: "ferry", host: "10.0.0.5", promotion_rule: "neutral", name: "db4", protocol_port: 7301, admin_port: 7401 }],
    ]);
  });

  it("gives a MariaDB cluster its logins first (write-only), then discovers from the seed and shows the notes", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: { ...CLUSTER, db_user_set: false } }),
      "GET /api/v1/clusters/1/servers": () => ({ body: [] }),
      "PATCH /api/v1/clusters/1": () => ({ body: { ...CLUSTER, db_user_set: true, db_password_set: true } }),
      "POST /api/v1/clusters/1/discovery": () => ({
        body: { seed: server(1, "s1", "mariadb", 3306), added: [server(2, "s2", "mariadb", 3307)], known: [],
                notes: [{ registered_server_id: 2, message: "s2: replica seen from 10.0.0.6" }] },
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<ServerAdmin clusterId={1} open />, { role: "operator" });
    const form = await screen.findByRole("form", { name: "Add a server" });
    await user.selectOptions(within(form).getByLabelText("Kind"), "mariadb");
    await user.type(within(form).getByLabelText("Host"), "10.0.0.5");
    await user.type(within(form).getByLabelText("SQL port"), "3306");
    await user.type(await within(form).findByLabelText("Database user"), "ferry");
    await user.type(within(form).getByLabelText("Database password"), "pw-secret");
    expect(within(form).getByLabelText("Database password").getAttribute("type")).toBe("password");
    await user.click(within(form).getByRole("button", { name: "Add and discover" }));

    const added = await screen.findByRole("status", { name: "Added" });
    expect(added.textContent).toContain("Added s1; discovery from it added s2.");
    expect(within(added).getByRole("list", { name: "Discovery notes" }).textContent).toBe("s2: replica seen from 10.0.0.6");
    expect((within(form).getByLabelText("Database password") as HTMLInputElement).value).toBe("");
    const writes = requests.filter((r) => r.method !== "GET").map((r) => [r.method, r.path, r.body]);
    expect(writes).toEqual([
      ["PATCH", "/api/v1/clusters/1", { db_user: "ferry", db_password: "pw-secret" }],
      ["POST", "/api/v1/clusters/1/discovery", { kind: "mariadb", host: "10.0.0.5", protocol_port: 3306, admin_port: 3306 }],
    ]);
  });

  it("discovers from a registered server and shows what it added and its notes", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "GET /api/v1/clusters/1/servers": () => ({ body: [server(1, "db1"), server(2, "db2", "ferry", 7302)] }),
      "POST /api/v1/clusters/1/discovery": () => ({
        body: { seed: server(2, "db2", "ferry", 7302), added: [server(3, "db3", "ferry", 7303)], known: [server(1, "db1")], notes: [] },
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<ServerAdmin clusterId={1} open />, { role: "operator" });
    const group = await screen.findByRole("group", { name: "Discover from a server" });
    await user.selectOptions(within(group).getByLabelText("Discover from"), "db2");
    await user.click(within(group).getByRole("button", { name: "Discover" }));
    const outcome = await within(group).findByRole("status", { name: "Discovery outcome" });
    expect(outcome.textContent).toContain("From db2: added db3; known already: db1.");
    expect(outcome.textContent).toContain("Discovery had no notes.");
    const writes = requests.filter((r) => r.method !== "GET").map((r) => [r.method, r.path, r.body]);
    expect(writes).toEqual([
      ["POST", "/api/v1/clusters/1/discovery", { kind: "ferry", host: "10.0.0.5", protocol_port: 7302, admin_port: 7402 }],
    ]);
  });

  it("lists the servers awaiting approval: an operator sees them, an admin approves an address", async () => {
    const pending = { ...server(5, "made-up"), approved: false };
    const approved = { ...pending, approved: true, approved_by: "ops-admin", approved_at: "2026-01-01T00:00:00Z" };
    let servers = [server(1, "db1"), pending];
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "GET /api/v1/clusters/1/servers": () => ({ body: servers }),
      "POST /api/v1/clusters/1/servers/5/approve": () => {
        servers = [server(1, "db1"), approved];
        return { body: approved };
      },
    });
    const { unmount } = renderSignedIn(<ServerAdmin clusterId={1} />, { role: "operator" });
    const listed = await screen.findByRole("status", { name: "Servers awaiting approval" });
    expect(listed.textContent).toContain("made-up (server_id 5) at 10.0.0.5:7301, 10.0.0.5:7401");
    expect(listed.textContent).not.toContain("db1");
    expect(within(listed).queryByRole("button", { name: "Approve address" })).toBeNull();
    unmount();

    const user = userEvent.setup();
    renderSignedIn(<ServerAdmin clusterId={1} />, { role: "admin" });
    const forAdmin = await screen.findByRole("status", { name: "Servers awaiting approval" });
    await user.click(await within(forAdmin).findByRole("button", { name: "Approve address" }));
    await user.click(within(forAdmin).getByRole("button", { name: /^Approve 10\.0\.0\.5:7301, 10\.0\.0\.5:7401/ }));
    await vi.waitFor(() => expect(screen.queryByRole("status", { name: "Servers awaiting approval" })).toBeNull());
    expect(requests.filter((r) => r.method !== "GET").map((r) => [r.method, r.path])).toEqual([
      ["POST", "/api/v1/clusters/1/servers/5/approve"],
    ]);
  });

  it("shows a viewer nothing", async () => {
    mockApi({ "GET /api/v1/clusters/1/servers": () => ({ body: [server(1, "db1")] }) });
    renderSignedIn(
      <>
        <RequireRole role="viewer"><p>signed in</p></RequireRole>
        <ServerAdmin clusterId={1} open />
      </>,
      { role: "viewer" },
    );
    expect(await screen.findByText("signed in")).toBeTruthy();
    expect(screen.queryByRole("form", { name: "Add a server" })).toBeNull();
    expect(screen.queryByRole("group", { name: "Discover from a server" })).toBeNull();
  });
});

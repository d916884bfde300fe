// The server page against a fake backend: the server's label, kind, addresses, role, binlog format and master-side
// semi-sync; its
// connection with its settings (delay, parallel mode × workers, semi-sync, heartbeat in the full list); its positions
// per domain; its maintenance with owner, reason and end; its change consumers (read live: why a MariaDB server has
// none); and only the operations and audit rows that concern it.
import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { TOPOLOGY, operation } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { ServerView } from "./ServerView";

const SERVER = {
  id: 2, cluster_id: 1, name: "b", label: "b (server_id 2)", kind: "mariadb", host: "10.0.0.2", protocol_port: 3306,
  admin_port: 3306, labels: { dc: "east" }, maintenance: true,
  maintenance_detail: { owner: "alice", reason: "disk swap", since: null, until: new Date(Date.now() + 7_200_000).toISOString() },
  promotion_rule: "prefer", origin: "registered", fenced: false, fenced_at: null, fence_reason: null, approved: true,
  approved_by: "ops-admin", approved_at: "2026-01-01T00:00:00Z", health: "healthy",
  consecutive_failures: 0, last_seen_at: "2026-11-26T13:00:00Z", last_error: null, reported_server_id: 2, read_only: true,
  binlog_format: "ROW", version: "10.11.6-MariaDB", replicas_may_be_ahead: false,
  master_role: { semi_sync: true, semi_sync_timeout_ms: 10000, semi_sync_wait_point: "AFTER_SYNC" }, gtid_binlog_pos: "2-2-7",
  gtid_slave_pos: "1-1-102", gtid_current_pos: "1-1-102,2-2-7", created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-01T00:00:00Z",
} as Schemas["ServerRead"];

const SETTINGS = { delay_s: 30, ignore_duplicates: false, heartbeat_ms: 1000, parallel_mode: "optimistic", workers: 4,
  domain_workers_max: 2, semi_sync_replica: false, filters: {} };

describe("ServerView", () => {
  it("shows the server, its connection's settings, positions per domain, maintenance and what concerns it", async () => {
    const topology = { ...TOPOLOGY, edges: TOPOLOGY.edges.map((e) => (e.replica_registered_server_id === 2 ? { ...e, settings: SETTINGS } : e)) };
    mockApi({
      "GET /api/v1/clusters/1/servers": () => ({ body: [SERVER] }),
      "GET /api/v1/clusters/1/topology": () => ({ body: topology }),
      "GET /api/v1/clusters/1/servers/2/consumers": () => ({
        body: { registered_server_id: 2, label: "b (server_id 2)", kind: "mariadb", supported: false, consumers: [], cut_off: [],
                cut_off_total: 0, consumers_max: null, words: "b (server_id 2) does not tell change consumers apart from its replicas" },
      }),
      "GET /api/v1/clusters/1/operations": () => ({
        body: [operation({ id: 7, state: "succeeded", params: { candidate_registered_server_id: 2 } } as never),
               operation({ id: 8, state: "succeeded", params: { candidate_registered_server_id: 3 } } as never)],
      }),
      "GET /api/v1/audit": () => ({
        body: [
          { id: 1, at: "2026-11-26T12:00:00Z", actor: "alice", token_id: 1, action: "set_maintenance", method: "PUT", path: "/x",
            cluster_id: 1, outcome: "succeeded", status_code: 200, details: { path_params: { registered_server_id: "2" }, reason: "disk swap" } },
          { id: 2, at: "2026-11-26T12:00:00Z", actor: "bob", token_id: 2, action: "unfence_server", method: "POST", path: "/y",
            cluster_id: 1, outcome: "succeeded", status_code: 200, details: { path_params: { registered_server_id: "3" } } },
        ],
      }),
    });
    renderSignedIn(<ServerView clusterId={1} serverRef="2" />, { role: "viewer" });
    const page = await screen.findByRole("article", { name: "b (server_id 2)" });
    expect(within(page).getByRole("heading", { name: "b (server_id 2)" })).toBeTruthy();
    expect(within(page).getByText("MariaDB — 10.11.6-MariaDB")).toBeTruthy();
    expect(within(page).getAllByText("10.0.0.2:3306", { selector: "dd" })).toHaveLength(2); // SQL and admin: one port
    expect(await within(page).findByText("replica", { selector: "dd" })).toBeTruthy();
    expect(within(page).getByText("ROW")).toBeTruthy();
    expect(within(page).getByText("on, AFTER_SYNC, timeout 10000 ms")).toBeTruthy();
    expect(within(page).getByText(/by alice: disk swap · ends in (1 h 59 min|2 h 00 min)/)).toBeTruthy();

    const connections = within(page).getByRole("table", { name: "Replication connections" });
    expect(within(connections).getByText("a (server_id 1)")).toBeTruthy();
    expect(within(connections).getByText("delay 30 s · optimistic × 4 (2/domain) · async")).toBeTruthy();
    expect(within(connections).getByText("1000 ms")).toBeTruthy();

    expect(within(page).getByRole("heading", { name: "Change consumers" })).toBeTruthy();
    expect(await within(page).findByText("b (server_id 2) does not tell change consumers apart from its replicas")).toBeTruthy();

    const positions = within(page).getByRole("table", { name: "Positions per domain" });
    expect(within(positions).getAllByRole("row").map((r) => r.textContent)).toEqual([
      "Domaingtid_binlog_posgtid_slave_posgtid_current_pos", "1—1-1-1021-1-102", "22-2-7—2-2-7",
    ]);
    expect((await within(page).findByRole("list", { name: "Recent operations" })).textContent).toMatch(/^#7 Switchover/);
    const audit = await within(page).findByRole("list", { name: "Audit rows" });
    expect(within(audit).getAllByRole("listitem")).toHaveLength(1);
    expect(audit.textContent).toContain("alice: Set maintenance — succeeded (disk swap)");
  });

  it("names its errant transactions per domain and the alerts about it", async () => {
    const errant = [
      { domain: 2, server_id: 2, first_gtid: "2-2-101", last_gtid: "2-2-16979", transactions: 16879, since: "2026-11-28T12:41:00Z" },
      { domain: 3, server_id: 2, first_gtid: null, last_gtid: "3-2-9", transactions: null, since: "2026-11-28T12:42:00Z" },
    ];
    const message = "b (server_id 2) took 16,879 writes of its own while replicating a (server_id 1) that no master of it has";
    const topology = {
      ...TOPOLOGY,
      nodes: TOPOLOGY.nodes.map((n) => (n.registered_server_id === 2 ? { ...n, errant } : n)),
      alerts: [{ kind: "errant_transactions" as const, message, registered_server_id: 2 },
               { kind: "writable_replica" as const, message: "c replicates a and is writable", registered_server_id: 3 }],
    };
    mockApi({
      "GET /api/v1/clusters/1/servers": () => ({ body: [SERVER] }),
      "GET /api/v1/clusters/1/topology": () => ({ body: topology }),
      "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
      "GET /api/v1/audit": () => ({ body: [] }),
    });
    renderSignedIn(<ServerView clusterId={1} serverRef="2" />, { role: "viewer" });
    const page = await screen.findByRole("article", { name: "b (server_id 2)" });
    const table = await within(page).findByRole("table", { name: "Errant transactions" });
    const rows = within(table).getAllByRole("row").slice(1).map((r) => Array.from(r.children).map((c) => c.textContent));
    expect(rows.map((r) => r.slice(0, 4))).toEqual([
      ["2", "16,879", "2-2-101", "2-2-16979"],
      ["3", "not countable from positions", "—", "3-2-9"],
    ]);
    const alerts = within(page).getByRole("alert", { name: "Alerts about this server" });
    expect(within(alerts).getAllByRole("listitem").map((li) => li.textContent)).toEqual([message]);
  });

  it("offers an operator a rejoin for a stray read-only server and a consistency check for a replica", async () => {
    const stray = { ...TOPOLOGY, nodes: TOPOLOGY.nodes.map((n) => (n.registered_server_id === 2 ? { ...n, role: "standalone" as const, read_only: true } : n)),
      edges: TOPOLOGY.edges.filter((e) => e.replica_registered_server_id !== 2) };
    const answers = (topology: Schemas["TopologyGraph"]) => ({
      "GET /api/v1/clusters/1/servers": () => ({ body: [{ ...SERVER, maintenance: false, maintenance_detail: null }] }),
      "GET /api/v1/clusters/1/topology": () => ({ body: topology }),
      "GET /api/v1/clusters/1/servers/2/consumers": () => ({ body: { registered_server_id: 2, label: "b", kind: "mariadb", supported: false,
        consumers: [], cut_off: [], cut_off_total: 0, consumers_max: null, words: "" } }),
      "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
      "GET /api/v1/audit": () => ({ body: [] }),
    });
    mockApi(answers(stray));
    const { unmount } = renderSignedIn(<ServerView clusterId={1} serverRef="2" />, { role: "operator" });
    expect(await screen.findByRole("button", { name: "Rejoin as a replica…" })).toBeTruthy();
    expect(screen.queryByRole("button", { name: "Check consistency with its source…" })).toBeNull();
    unmount();
    mockApi(answers(TOPOLOGY));
    renderSignedIn(<ServerView clusterId={1} serverRef="2" />, { role: "operator" });
    expect(await screen.findByRole("button", { name: "Check consistency with its source…" })).toBeTruthy();
    expect(screen.queryByRole("button", { name: "Rejoin as a replica…" })).toBeNull();
  });

  it("says when the server is not in the cluster", async () => {
    mockApi({
      "GET /api/v1/clusters/1/servers": () => ({ body: [SERVER] }),
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    });
    renderSignedIn(<ServerView clusterId={1} serverRef="99" />, { role: "viewer" });
    expect((await screen.findByRole("alert")).textContent).toBe("No server of this cluster reports server_id 99 (removed, or not read yet?).");
  });

  it("opens the server by the server_id it reports, not by the control plane's id", async () => {
    const other = { ...SERVER, id: 5, name: "e", label: "e (server_id 2)", reported_server_id: 2 } as Schemas["ServerRead"];
    const mine = { ...SERVER, reported_server_id: 12, label: "b (server_id 12)" } as Schemas["ServerRead"];
    mockApi({
      "GET /api/v1/clusters/1/servers": () => ({ body: [mine, other] }),
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
      "GET /api/v1/clusters/1/servers/5/consumers": () => ({ status: 404, body: { error: { code: "not_found", message: "x" } } }),
      "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
      "GET /api/v1/audit": () => ({ body: [] }),
    });
    // /servers/2 is server_id 2: the server the control plane registered as 5, not the one it registered as 2.
    renderSignedIn(<ServerView clusterId={1} serverRef="2" />, { role: "viewer" });
    expect(await screen.findByRole("article", { name: "e (server_id 2)" })).toBeTruthy();
    expect(screen.queryByRole("article", { name: "b (server_id 12)" })).toBeNull();
  });
});

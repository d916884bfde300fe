// The Topology tab against a fake backend: every server drawn with the master marked; an unreachable server, a
// read-only one, maintenance, a fenced one and an IO error are each said in words, not only in colour; the cluster's
// alerts as a banner; each server's kind and version (and a master whose replicas may get ahead of its binlog); a
// MariaDB replica stopped by a duplicate key shows the server's own error code and message.
import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { TOPOLOGY } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { TopologyView } from "./TopologyView";

const TROUBLED: Schemas["TopologyGraph"] = {
  ...TOPOLOGY,
  nodes: TOPOLOGY.nodes.map((n) =>
    n.name === "c" ? { ...n, health: "unreachable" as const } : n.name === "b" ? { ...n, maintenance: true } : n,
  ),
  edges: TOPOLOGY.edges.map((e) =>
    e.replica_registered_server_id === 3
      ? { ...e, running: false, io_state: "error", last_error_code: "purged", last_error_message: "1-1-5 was purged" }
      : e,
  ),
};

describe("TopologyView", () => {
  it("draws every server, marks the master and says each trouble in words", async () => {
    mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: TROUBLED }),
      "GET /api/v1/clusters/1/servers": () => ({ body: [{ id: 2, fenced: true, fence_reason: "replaced by failover 3" }] }),
    });
    renderSignedIn(<TopologyView clusterId={1} />, { role: "viewer" });
    const graph = await screen.findByRole("img", { name: "Topology graph: 3 servers, 2 replication connections" });
    expect((await within(graph).findAllByText(/FENCED/)).length).toBeGreaterThan(0);
    const boxes = within(graph).getAllByRole("listitem");
    expect(boxes.map((b) => b.getAttribute("aria-label"))).toEqual([
      "a: master, healthy, writable",
      "b: replica, healthy, read-only, MAINTENANCE, FENCED",
      "c: replica, unreachable, read-only",
    ]);
    expect(within(graph).getByText(/★/).textContent).toContain("a");
    expect(within(graph).getByText("IO error purged")).toBeTruthy();
    expect(within(graph).getAllByText("main")).toHaveLength(2);

    const connections = screen.getByRole("table", { name: "Replication connections" });
    expect(within(connections).getByText("IO error purged")).toBeTruthy();
    const troubled = within(connections).getAllByRole("row").find((r) => r.textContent?.includes("IO error purged"));
    expect(troubled?.lastElementChild?.textContent).toBe("purged: 1-1-5 was purged");
    const servers = screen.getByRole("table", { name: "Servers" });
    expect(within(servers).getByText("unreachable")).toBeTruthy();
    expect(within(servers).getByText("maintenance")).toBeTruthy();
    expect(within(servers).getByText("fenced: replaced by failover 3")).toBeTruthy();
  });

  it("shows the cluster's alerts in words, and no banner without any", async () => {
    const alerts: Schemas["ClusterAlert"][] = [
      { kind: "master_read_only", message: "master a is read-only and no operation is running", registered_server_id: 1 },
      { kind: "operation_interrupted", message: "operation 7 (switchover) was interrupted: undone", operation_id: 7 },
    ];
    mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: { ...TOPOLOGY, alerts } }),
      "GET /api/v1/clusters/1/servers": () => ({ body: [] }),
    });
    renderSignedIn(<TopologyView clusterId={1} />, { role: "viewer" });
    const banner = await screen.findByRole("alert", { name: "Cluster alerts" });
    expect(within(banner).getAllByRole("listitem").map((item) => item.textContent)).toEqual([
      "Master read-only: master a is read-only and no operation is running",
      "Operation interrupted: operation 7 (switchover) was interrupted: undone",
    ]);
  });

  it("shows no alert banner when there is none", async () => {
    mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: { ...TOPOLOGY, alerts: [] } }),
      "GET /api/v1/clusters/1/servers": () => ({ body: [] }),
    });
    renderSignedIn(<TopologyView clusterId={1} />, { role: "viewer" });
    await screen.findByRole("table", { name: "Servers" });
    expect(screen.queryByRole("alert", { name: "Cluster alerts" })).toBeNull();
  });

  it("shows each server's kind and version, and a MariaDB error with the server's code and message", async () => {
    const message =
      "Could not execute Write_rows_v1 event on table app.e2e_dup; Duplicate entry '1' for key 'PRIMARY', Error_code: 1062";
    const mariadb: Schemas["TopologyGraph"] = {
      ...TOPOLOGY,
      // sync_binlog=0 everywhere: only the master, which has replicas, is flagged.
      nodes: TOPOLOGY.nodes.map((n) => ({
        ...n, kind: "mariadb" as const, version: n.name === "c" ? null : "10.11.19-MariaDB-log", replicas_may_be_ahead: true,
        warnings: n.name === "b" ? ["semi-sync fell back to asynchronous"] : [],
      })),
      edges: TOPOLOGY.edges.map((e) =>
        e.replica_registered_server_id === 3
          ? { ...e, running: false, io_state: "connected", sql_state: "error", last_error_code: "1062", last_error_message: message }
          : e,
      ),
    };
    mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: mariadb }),
      "GET /api/v1/clusters/1/servers": () => ({ body: [] }),
    });
    renderSignedIn(<TopologyView clusterId={1} />, { role: "viewer" });
    const servers = await screen.findByRole("table", { name: "Servers" });
    const kindCells = within(servers).getAllByRole("row").slice(1).map((row) => row.children[2]?.textContent);
    expect(kindCells).toEqual([
      "MariaDB10.11.19-MariaDB-log⚠ replicas may be ahead",
      "MariaDB10.11.19-MariaDB-log⚠ semi-sync fell back to asynchronous",
      "MariaDBversion not read yet",
    ]);
    expect(within(servers).getByText("replicas may be ahead").closest(".badge")?.getAttribute("title")).toMatch(/sync_binlog ≠ 1/);

    const graph = screen.getByRole("img", { name: /Topology graph/ });
    expect(within(graph).getByText("SQL error 1062")).toBeTruthy();
    const connections = screen.getByRole("table", { name: "Replication connections" });
    const row = within(connections).getAllByRole("row").find((r) => r.textContent?.includes("SQL error 1062"));
    expect(within(row!).getByRole("rowheader").textContent).toBe("c");
    expect(row!.lastElementChild?.textContent).toBe(`1062: ${message}`);
  });

  it("says each connection's settings in a line with the full list beside, a stall with its reason, a binlog format", async () => {
    const settings = { delay_s: 30, ignore_duplicates: false, heartbeat_ms: 1000, parallel_mode: "optimistic", workers: 4,
      domain_workers_max: 2, semi_sync_replica: false, filters: {} };
    const stall = { transactions_waiting: 185, domains: [1], no_progress_s: 7, reason: "4 workers: Waiting for table metadata lock" };
    const graph: Schemas["TopologyGraph"] = {
      ...TOPOLOGY,
      nodes: TOPOLOGY.nodes.map((n) => ({ ...n, binlog_format: "ROW" })),
      edges: TOPOLOGY.edges.map((e) =>
        e.replica_registered_server_id === 3 ? { ...e, settings: { ...settings, delay_s: 0 }, stall } : { ...e, settings },
      ),
    };
    mockApi({
      "GET /api/v1/clusters/1/topology": () => ({ body: graph }),
      "GET /api/v1/clusters/1/servers": () => ({ body: [] }),
    });
    renderSignedIn(<TopologyView clusterId={1} />, { role: "viewer" });
    const connections = await screen.findByRole("table", { name: "Replication connections" });
    const [, delayed, stalled] = within(connections).getAllByRole("row");
    expect(within(delayed!).getByText("delayed replica (30 s)")).toBeTruthy();
    expect(within(delayed!).getByText("delay 30 s · optimistic × 4 (2/domain) · async")).toBeTruthy();
    expect(within(delayed!).getByText("1000 ms")).toBeTruthy(); // the heartbeat, in the full list
    expect(within(stalled!).getByText("stalled in domain 1: 185 waiting, no progress for 7 s")).toBeTruthy();
    expect(within(stalled!).getByText("4 workers: Waiting for table metadata lock")).toBeTruthy();
    const servers = screen.getByRole("table", { name: "Servers" });
    expect(within(servers).getAllByText("binlog format ROW")).toHaveLength(3);
  });
});

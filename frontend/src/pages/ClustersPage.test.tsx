// The clusters overview: one request for every cluster, each row read from the server's summary (health and
// why, master, replicas, worst lag, last drill, automatic failover).
import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { CLUSTER_OVERVIEW } from "../test/fixtures";
import { mockApi } from "../test/mockApi";
import { renderSignedIn } from "../test/render";
import { ClustersPage } from "./ClustersPage";

describe("ClustersPage", () => {
  it("renders each cluster's summary from the one overview request", async () => {
    const degraded = {
      ...CLUSTER_OVERVIEW, id: 2, name: "prod-us", health: "degraded" as const, problems: ["c unreachable", "b: purged"],
      auto_failover: true, last_drill: null, plaintext_transport: false,
    };
    const { requests } = mockApi({ "GET /api/v1/clusters/overview": () => ({ body: [CLUSTER_OVERVIEW, degraded] }) });
    renderSignedIn(<ClustersPage />, { role: "viewer" });

    const row = (await screen.findByRole("link", { name: "prod-eu" })).closest("tr")!;
    const cells = within(row).getAllByRole("cell").map((cell) => cell.textContent);
    expect(cells[0]).toMatch(/healthy/);
    // The worst lag in the API's own words (judged on the server), and the connection it is on.
    expect(cells.slice(1, 4)).toEqual(["a", "2 of 3 servers", "△ 200 ms · 3 txnb (server_id 2) (main), domain 1"]);
    expect(cells[4]).toMatch(/passed.*RTO 210\.0 ms/);
    expect(cells[5]).toBe("off");

    const other = screen.getByRole("link", { name: "prod-us" }).closest("tr")!;
    const otherCells = within(other).getAllByRole("cell").map((cell) => cell.textContent);
    expect(otherCells[0]).toMatch(/degraded.*c unreachable; b: purged/);
    expect(otherCells[4]).toBe("never");
    expect(otherCells[5]).toBe("on");

    // Only the cluster spoken to in clear text carries the warning.
    expect(within(row).getByRole("rowheader").textContent).toMatch(/clear text/);
    expect(within(other).getByRole("rowheader").textContent).not.toMatch(/clear text/);

    expect(requests.map((r) => `${r.method} ${r.path}`).filter((r) => r.includes("/clusters"))).toEqual([
      "GET /api/v1/clusters/overview",
    ]);
  });

  it("shows a stalled replica as a warning beside a healthy cluster's health", async () => {
    const warning = "s5: stalled in domain 1: 185 transactions waiting, no progress for 7 s (4 workers: Waiting for table metadata lock)";
    mockApi({ "GET /api/v1/clusters/overview": () => ({ body: [{ ...CLUSTER_OVERVIEW, warnings: [warning] }] }) });
    renderSignedIn(<ClustersPage />, { role: "viewer" });
    const row = (await screen.findByRole("link", { name: "prod-eu" })).closest("tr")!;
    const health = within(row).getAllByRole("cell")[0]!;
    expect(health.textContent).toMatch(/^● healthy/);
    expect(within(health).getByText(warning)).toBeTruthy();
  });
});

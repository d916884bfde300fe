// The collector health page against a fake backend: the exact requests, each cycle a point, the duration and the
// failed polls summed up in words, and the servers behind the failed polls with their errors, each linked to its page.
import { screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { mockApi } from "../test/mockApi";
import { renderSignedIn } from "../test/render";
import { CollectorPage } from "./CollectorPage";

const NO_FAILURES = { cycles: 3, since: "2025-01-01T00:00:01Z", failed: 0, unnamed: 0, servers: [] };

const cycle = (second: number, duration: number, failed: number) => ({
  finished_at: `2025-01-01T00:00:0${second}Z`, duration_s: duration, polled: 3, failed,
});

describe("CollectorPage", () => {
  it("charts each cycle's duration and failed polls", async () => {
    const { requests } = mockApi({
      "GET /api/v1/collector/cycles": () => ({
        body: {
          instance_id: "api-1-42-abcd", role: "leader", poll_interval_s: 1,
          cycles: [cycle(1, 0.01, 0), cycle(2, 0.03, 2), cycle(3, 0.02, 0)],
        },
      }),
      "GET /api/v1/collector/failed-polls": () => ({ body: NO_FAILURES }),
    });
    renderSignedIn(<CollectorPage />, { role: "viewer" });
    const figure = await screen.findByRole("figure", { name: "Collector cycles" });
    expect(figure.getAttribute("data-points")).toBe("3");
    expect(figure.textContent).toContain("3 cycles: median 20.0 ms, longest 30.0 ms; 2 failed polls in 1 cycles; every 1 s");
    // Recharts draws its shapes once its layout is measured: wait for them.
    await waitFor(() => expect(figure.querySelectorAll(".recharts-bar-rectangle").length).toBeGreaterThan(0));
    expect(screen.getByText(/leader; its last 3 cycles/)).toBeTruthy();
    expect(requests.map((r) => `${r.path}?${r.query}`).sort()).toEqual([
      "/api/v1/collector/cycles?limit=900",
      "/api/v1/collector/failed-polls?limit=900",
    ]);
    expect(await screen.findByText("No failed polls in the last 3 cycles.")).toBeTruthy();
  });

  it("names the servers behind the failed polls with their last error, each linked to its page", async () => {
    const row = (over: object) => ({
      cluster_id: 2, cluster: "seed000", registered_server_id: 7, server_id: 3, server: "db-3 (server_id 3)", failed: 2,
      first_failed_at: "2025-01-01T00:00:02Z", last_failed_at: "2025-01-01T00:00:03Z", last_error: "connection refused", ...over,
    });
    mockApi({
      "GET /api/v1/collector/cycles": () => ({ body: { instance_id: "api-1", role: "leader", poll_interval_s: 1, cycles: [cycle(1, 0.01, 4)] } }),
      "GET /api/v1/collector/failed-polls": () => ({
        body: {
          cycles: 900, since: "2025-01-01T00:00:01Z", failed: 5, unnamed: 1,
          servers: [
            row({}),
            row({ registered_server_id: 9, server_id: null, server: "new (server_id not read yet)", failed: 1, last_error: "timed out" }),
            row({ registered_server_id: 4, cluster: null, server_id: null, server: "a server removed since (registered id 4)", failed: 1 }),
          ],
        },
      }),
    });
    renderSignedIn(<CollectorPage />, { role: "viewer" });
    const table = await screen.findByRole("table", { name: "Failed polls by server" });
    expect(screen.getByText(/^5 failed polls in the last 900 cycles \(1 of them not named/)).toBeTruthy();
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows.map((r) => [...r.children].map((c) => c.textContent))).toEqual([
      ["db-3 (server_id 3)", "seed000", "2", "2025-01-01 00:00:03 UTC", "connection refused"],
      ["new (server_id not read yet)", "seed000", "1", "2025-01-01 00:00:03 UTC", "timed out"],
      ["a server removed since (registered id 4)", "removed", "1", "2025-01-01 00:00:03 UTC", "connection refused"],
    ]);
    // Each leads to its server's page: by the server_id it reports, else by the control plane's id; a removed one to none.
    expect(within(rows[0]!).getByRole("link").getAttribute("href")).toBe("/clusters/2/servers/3");
    expect(within(rows[1]!).getByRole("link").getAttribute("href")).toBe("/clusters/2/servers/registered-9");
    expect(within(rows[2]!).queryByRole("link")).toBeNull();
  });

  it("says why a standby has no cycles", async () => {
    mockApi({
      "GET /api/v1/collector/cycles": () => ({ body: { instance_id: "api-2", role: "standby", poll_interval_s: 1, cycles: [] } }),
      "GET /api/v1/collector/failed-polls": () => ({ body: { ...NO_FAILURES, cycles: 0 } }),
    });
    renderSignedIn(<CollectorPage />, { role: "viewer" });
    expect(await screen.findByText(/it is a standby: another instance collects/)).toBeTruthy();
  });
});

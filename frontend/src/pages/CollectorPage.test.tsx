// The collector health page against a fake backend: the exact request, each cycle a point, the duration and the
// failed polls summed up in words.
import { screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { mockApi } from "../test/mockApi";
import { renderSignedIn } from "../test/render";
import { CollectorPage } from "./CollectorPage";

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
    });
    renderSignedIn(<CollectorPage />, { role: "viewer" });
    const figure = await screen.findByRole("figure", { name: "Collector cycles" });
    expect(figure.getAttribute("data-points")).toBe("3");
    expect(figure.textContent).toContain("3 cycles: median 20.0 ms, longest 30.0 ms; 2 failed polls in 1 cycles; every 1 s");
    // Recharts draws its shapes once its layout is measured: wait for them.
    await waitFor(() => expect(figure.querySelectorAll(".recharts-bar-rectangle").length).toBeGreaterThan(0));
    expect(screen.getByText(/leader; its last 3 cycles/)).toBeTruthy();
    expect(requests.map((r) => `${r.path}?${r.query}`)).toEqual(["/api/v1/collector/cycles?limit=900"]);
  });

  it("says why a standby has no cycles", async () => {
    mockApi({
      "GET /api/v1/collector/cycles": () => ({ body: { instance_id: "api-2", role: "standby", poll_interval_s: 1, cycles: [] } }),
    });
    renderSignedIn(<CollectorPage />, { role: "viewer" });
    expect(await screen.findByText(/it is a standby: another instance collects/)).toBeTruthy();
  });
});

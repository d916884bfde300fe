// The switchover and failover history chart against a fake backend: the request asks for real switchovers and
// failovers only, each one is a point marked by its outcome, and the caption counts them.
import { screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { mockApi } from "../../test/mockApi";
import { operation } from "../../test/fixtures";
import { renderSignedIn } from "../../test/render";
import { UnavailabilityHistory, windowPoints } from "./UnavailabilityChart";

const OPERATIONS = [
  operation({ id: 9, type: "failover", state: "succeeded", dry_run: false, started_at: "2025-01-02T00:00:00Z", result: { promoted_after_s: 2.5 } }),
  operation({ id: 8, type: "switchover", state: "failed", dry_run: false, started_at: "2025-01-01T12:00:00Z", result: null }),
  operation({ id: 7, type: "switchover", state: "succeeded", dry_run: false, started_at: "2025-01-01T00:00:00Z", result: { unavailable_s: 0.21 } }),
];

describe("UnavailabilityHistory", () => {
  it("asks for real switchovers and failovers and marks each one by its outcome", async () => {
    const { requests } = mockApi({ "GET /api/v1/clusters/1/operations": () => ({ body: OPERATIONS }) });
    renderSignedIn(<UnavailabilityHistory clusterId={1} />, { role: "viewer" });

    const figure = await screen.findByRole("figure", { name: "Write unavailability per operation" });
    expect(figure.getAttribute("data-points")).toBe("3");
    expect(figure.textContent).toContain("3 operations: 2 succeeded, 1 failed; longest 2.500 s");
    // Every request (the history refreshes itself, so a slow machine may have sent a second by now) asks for the same.
    expect(requests.length).toBeGreaterThan(0);
    for (const request of requests) {
      expect(request.query.getAll("type")).toEqual(["switchover", "failover"]);
      expect(request.query.get("dry_run")).toBe("false");
      expect(request.query.get("limit")).toBe("200");
    }
    await waitFor(() => expect(figure.querySelectorAll(".outcome-mark")).toHaveLength(3));
    const marks = [...figure.querySelectorAll(".outcome-mark")].map((m) => [m.getAttribute("data-state"), m.querySelector("title")?.textContent]);
    expect(marks).toHaveLength(3);
    expect(marks.map(([state]) => state).sort()).toEqual(["failed", "succeeded", "succeeded"]);
    expect(marks.find(([state]) => state === "failed")![1]).toMatch(/^#8 switchover failed at .*: no window measured$/);
  });

  it("says so when nothing has run", async () => {
    mockApi({ "GET /api/v1/clusters/1/operations": () => ({ body: [] }) });
    renderSignedIn(<UnavailabilityHistory clusterId={1} />, { role: "viewer" });
    expect(await screen.findByText("No switchover or failover has run yet.")).toBeTruthy();
  });

  it("takes each type's own figure and leaves unfinished operations out", () => {
    const points = windowPoints([...OPERATIONS, operation({ id: 10, type: "switchover", state: "running", started_at: "2025-01-03T00:00:00Z" })]);
    expect(points.map((p) => [p.id, p.seconds, p.measured])).toEqual([
      [7, 0.21, true],
      [8, 0, false],
      [9, 2.5, true],
    ]);
  });
});

// Tests of the event → stale queries mapping.
import { describe, expect, it } from "vitest";
import { staleQueries } from "./invalidation";

describe("staleQueries", () => {
  it("refreshes positions on a position change", () => {
    expect(staleQueries("position", { server_id: 1 })).toContainEqual(["positions"]);
  });
  it("refreshes one operation while it runs, and the topology once it ended", () => {
    expect(staleQueries("operation", { operation_id: 4, state: "running" })).toEqual([["operations"], ["operation", 4]]);
    expect(staleQueries("operation", { operation_id: 4, state: "succeeded" })).toContainEqual(["topology"]);
  });
  it("ignores the subscription greeting", () => {
    expect(staleQueries("subscribed", {})).toEqual([]);
  });
});

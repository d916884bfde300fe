// Tests of the event → stale queries mapping, and of reading an event from the stream.
import { describe, expect, it } from "vitest";
import { parseEvent, staleQueries } from "./invalidation";

describe("staleQueries", () => {
  it("refreshes positions on a position change", () => {
    expect(staleQueries({ event: "position", registered_server_id: 1, domain: 1, gtid: "1-1-5" })).toContainEqual(["positions"]);
  });
  it("refreshes one operation while it runs, and the topology once it ended", () => {
    const running = { event: "operation", operation_id: 4, type: "switchover", state: "running" } as const;
    expect(staleQueries(running)).toEqual([["operations"], ["operation", 4]]);
    expect(staleQueries({ ...running, state: "succeeded" })).toContainEqual(["topology"]);
  });
  it("refreshes servers and topology when a maintenance starts or ends by itself", () => {
    const ended = { event: "maintenance", registered_server_id: 2, maintenance: false, by: "expiry" } as const;
    expect(staleQueries(ended)).toEqual(expect.arrayContaining([["servers"], ["topology"]]));
  });
  it("refreshes the servers and topology when the replica guard acts, the topology when errant transactions change", () => {
    const enforced = { event: "replica_guard", registered_server_id: 3, action: "enforced", detail: "made read-only" } as const;
    expect(staleQueries(enforced)).toEqual([["servers"], ["topology"]]);
    expect(staleQueries({ event: "errant", registered_server_id: 3, domains: [] })).toEqual([["topology"]]);
  });
  it("ignores the subscription greeting", () => {
    expect(staleQueries({ event: "subscribed", cluster_id: 1 })).toEqual([]);
  });
});

describe("parseEvent", () => {
  it("reads an event's data as its type", () => {
    expect(parseEvent("drill", '{"event": "drill", "drill_run_id": 2, "operation_id": 5, "state": "passed"}')).toEqual({
      event: "drill", drill_run_id: 2, operation_id: 5, state: "passed",
    });
  });
  it("refuses data that is not JSON or not of the named type", () => {
    expect(parseEvent("position", "not json")).toBeNull();
    expect(parseEvent("position", '{"event": "health", "registered_server_id": 1, "state": "healthy"}')).toBeNull();
  });
});

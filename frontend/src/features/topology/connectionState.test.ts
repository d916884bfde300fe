// Tests of a connection's state in words: errors and stops are said in text, not only colour.
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { connectionState } from "./connectionState";

const base: Schemas["TopologyEdge"] = {
  link_id: 1,
  source: "replica",
  connection: "main",
  master_registered_server_id: 1,
  master_address: "127.0.0.1:7301",
  replica_registered_server_id: 2,
  running: true,
  io_state: "connected",
  sql_state: "applying",
  waiting_for_relay_space: false,
  lag: { "1": { seconds: 0.5, transactions: 3, delay_s: 0, beyond_delay_s: 0.5, level: "low", words: "500 ms · 3 txn" } },
  worst_lag: { seconds: 0.5, transactions: 3, delay_s: 0, beyond_delay_s: 0.5, level: "low", words: "500 ms · 3 txn" },
  last_error_code: null,
  last_error_message: null,
  updated_at: "2025-01-01T00:00:00Z",
};

describe("connectionState", () => {
  it("says replicating with the lag", () => {
    expect(connectionState(base)).toEqual({ tone: "ok", text: "replicating", lag: "500 ms · 3 txn" });
  });
  it("names an IO or SQL error and its code", () => {
    expect(connectionState({ ...base, io_state: "error", last_error_code: "purged" }).text).toBe("IO error purged");
    expect(connectionState({ ...base, sql_state: "error", running: false }).text).toBe("SQL error");
  });
  it("names a stopped side", () => {
    expect(connectionState({ ...base, running: false, io_state: "stopped", sql_state: "stopped" })).toMatchObject({
      tone: "warn",
      text: "stopped",
    });
    expect(connectionState({ ...base, sql_state: "stopped" }).text).toBe("SQL stopped");
  });
  it("says when the receiving side waits for relay log space, and that a paused applier comes first", () => {
    expect(connectionState({ ...base, waiting_for_relay_space: true })).toMatchObject({
      tone: "warn",
      text: "IO waiting for relay log space",
    });
    expect(connectionState({ ...base, waiting_for_relay_space: true, sql_state: "stopped" }).text).toBe("SQL stopped");
  });
  it("flags a SQL side that applies nothing while transactions wait, with the server's reason", () => {
    const stall = { transactions_waiting: 185, domains: [1], no_progress_s: 7.2, reason: "4 workers: Waiting for table metadata lock" };
    expect(connectionState({ ...base, sql_state: "waiting_for_relay", stall })).toEqual({
      tone: "warn",
      text: "stalled in domain 1: 185 waiting, no progress for 7 s",
      lag: "500 ms · 3 txn",
      reason: "4 workers: Waiting for table metadata lock",
    });
  });
  it("says a replica delayed by configuration is delayed, whatever its applier does this second", () => {
    const settings = { delay_s: 30, ignore_duplicates: false, filters: {} };
    expect(connectionState({ ...base, settings }).text).toBe("delayed replica (30 s)");
  });
});

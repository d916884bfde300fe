// Tests of lag samples → chart series.
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { delayBands, lagSeries } from "./lagSeries";

const sample = (over: Partial<Schemas["LagSampleRead"]>): Schemas["LagSampleRead"] => ({
  link_id: 1,
  replica_registered_server_id: 2,
  master_registered_server_id: 1,
  connection: "main",
  domain_id: 1,
  transactions: 0,
  seconds: 0,
  sampled_at: "2025-01-01T00:00:00Z",
  ...over,
});

describe("lagSeries", () => {
  const names = new Map([
    [1, "a"],
    [2, "b"],
  ]);
  const until = Date.parse("2025-01-01T00:01:00Z");

  it("makes one series per connection and domain, sorted in time, carried to the end", () => {
    const series = lagSeries(
      [
        sample({ sampled_at: "2025-01-01T00:00:10Z", transactions: 5, seconds: 0.5 }),
        sample({ sampled_at: "2025-01-01T00:00:05Z", transactions: 9, seconds: 1 }),
        sample({ domain_id: 2, sampled_at: "2025-01-01T00:00:07Z", transactions: 1 }),
      ],
      names,
      until,
    );
    expect(series.map((s) => s.label)).toEqual(["b (main) · domain 1", "b (main) · domain 2"]);
    expect(series[0]!.points.map((p) => p.transactions)).toEqual([9, 5, 5]);
    expect(series[0]!.points.at(-1)!.t).toBe(until);
    expect(series[1]!.points).toHaveLength(2);
  });

  it("ends with the current lag, and draws a connection without samples flat over the range", () => {
    const edge = {
      link_id: 7, source: "replica" as const, connection: "main", master_registered_server_id: 1, master_address: null,
      replica_registered_server_id: 2, running: true, io_state: "connected", sql_state: "applying",
      lag: { "3": { seconds: 0, transactions: 0, delay_s: 0, beyond_delay_s: 0, level: "none" as const, words: "0 s · 0 txn" } }, last_error_code: null, last_error_message: null,
      updated_at: "2025-01-01T00:00:00Z", waiting_for_relay_space: false,
    };
    const since = until - 60_000;
    const series = lagSeries([sample({ link_id: 7, domain_id: 1, transactions: 4 })], names, until, [
      { ...edge, lag: { "1": { seconds: 0, transactions: 2, delay_s: 0, beyond_delay_s: 0, level: "low" as const, words: "0 s · 2 txn" }, "3": { seconds: 0, transactions: 0, delay_s: 0, beyond_delay_s: 0, level: "none" as const, words: "0 s · 0 txn" } } },
    ], since);
    expect(series[0]!.points.map((p) => [p.t, p.transactions])).toEqual([
      [Date.parse("2025-01-01T00:00:00Z"), 4],
      [until, 2],
    ]);
    expect(series[1]!.points.map((p) => p.t)).toEqual([since, until]);
  });

  it("names a connection seen only by its master by the master", () => {
    const [only] = lagSeries([sample({ connection: null })], names, until);
    expect(only!.label).toBe("b (from a) · domain 1");
  });

  it("begins each series at the range's start with the value it had then", () => {
    const since = Date.parse("2025-01-01T00:00:00Z");
    const [series] = lagSeries(
      [sample({ sampled_at: "2025-01-01T00:00:30Z", transactions: 2 })],
      names,
      until,
      [],
      since,
      [sample({ sampled_at: "2024-12-31T23:50:00Z", transactions: 7, seconds: 3 })],
    );
    expect(series!.points.map((p) => [p.t, p.transactions])).toEqual([
      [since, 7],
      [Date.parse("2025-01-01T00:00:30Z"), 2],
      [until, 2],
    ]);
  });

  it("goes on as one series when the link between the same servers was removed and made again", () => {
    const series = lagSeries(
      [
        sample({ link_id: 1, sampled_at: "2025-01-01T00:00:10Z", seconds: 2 }),
        sample({ link_id: 7, sampled_at: "2025-01-01T00:00:40Z", seconds: 1 }),
      ],
      names,
      until,
    );
    expect(series.map((s) => [s.label, s.linkIds])).toEqual([["b (main) · domain 1", [1, 7]]]);
    expect(delayBands([{ link_id: 7, replica_registered_server_id: 2, master_registered_server_id: 1, connection: "main", delay_s: 30 }], series)).toEqual([
      { key: "delay-30", delayS: 30, label: "delay 30 s: b (main)" },
    ]);
  });
});

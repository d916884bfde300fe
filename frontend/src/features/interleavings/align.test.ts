// Tests of the interleavings alignment: lanes oldest first, labels, one column per GTID shared by every lane, GTID
// positions across lanes, domain order and differing interleavings (the two-master shape's figure, docs/background.md: each domain's order kept, the interleaving differs).
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { alignLanes, columnOrder, compareInterleaving, keepsDomainOrder, sameSharedOrder, type ColumnInput } from "./align";

type ServerEvents = Schemas["ServerEvents"];

/** A server's events from `domain-seq` labels written oldest first (the API gives newest first). */
function server(serverId: number, name: string, oldestFirst: string[], origin = 1): ServerEvents {
  const transactions = oldestFirst.map((label, i) => {
    const [domain, seq] = label.split("-").map(Number) as [number, number];
    return {
      gtid: `${domain}-${origin}-${seq}`,
      domain,
      origin_server_id: origin,
      seq_no: seq,
      commit_id: i,
      commit_ts_us: 1_000_000 + i,
      file: null,
      offset: null,
      tables: [],
      rows: 1,
    };
  });
  return { registered_server_id: serverId, name, transactions: transactions.reverse(), error: null, position: {}, never: [], truncated: false };
}

/** `domain-seq` labels as column inputs, oldest first. */
const inputs = (labels: string[]): ColumnInput[] =>
  labels.map((label) => {
    const [domain, seq] = label.split("-").map(Number) as [number, number];
    return { gtid: label, domain, seqNo: seq };
  });

describe("alignLanes", () => {
  const master = server(1, "a", ["1-1", "2-1", "1-2", "2-2", "3-1"]);
  const replica = server(2, "b", ["2-1", "1-1", "1-2", "3-1", "2-2"]);
  const sameOrder = server(3, "c", ["1-1", "2-1", "1-2", "2-2"]);

  it("makes one lane per server, oldest first, labelled domain-seq", () => {
    const { lanes } = alignLanes([master, replica]);
    expect(lanes.map((lane) => lane.name)).toEqual(["a", "b"]);
    expect(lanes[0]!.blocks.map((b) => b.label)).toEqual(["1-1", "2-1", "1-2", "2-2", "3-1"]);
    // Lane b interleaves 1-1/2-1 and 3-1/2-2 the other way: in a's columns its blocks cross, its binlog places kept.
    expect(lanes[1]!.blocks.map((b) => b.label)).toEqual(["1-1", "2-1", "1-2", "2-2", "3-1"]);
    expect(lanes[1]!.blocks.map((b) => b.index)).toEqual([1, 0, 2, 4, 3]);
    expect(lanes.map((lane) => lane.inColumnOrder)).toEqual([true, false]);
  });

  it("puts a GTID in the same column in every lane that holds it, each domain's order left to right", () => {
    // The seed's two-master shape: each master holds its own domain, the hub and its replica interleave both.
    const m1 = server(1, "m1", ["1-1", "1-2", "1-3", "1-4"]);
    const m2 = server(2, "m2", ["2-1", "2-2", "2-3"]);
    const hub = server(3, "hub", ["1-2", "2-1", "1-3", "2-2", "2-3", "1-4"]);
    const delayed = server(5, "delayed", ["1-2", "2-1", "1-3"]);
    const { lanes, columns, columnOf } = alignLanes([hub, m1, m2, delayed]);
    expect(columns.map((gtid) => gtid.replace("-1-", "-"))).toEqual(["1-1", "1-2", "2-1", "1-3", "2-2", "2-3", "1-4"]);
    for (const gtid of columns) {
      const where = lanes.flatMap((lane) => lane.blocks.filter((b) => b.gtid === gtid).map((b) => b.column));
      expect(new Set(where)).toEqual(new Set([columnOf.get(gtid)]));
    }
    expect(lanes.find((l) => l.name === "m2")!.blocks.map((b) => b.column)).toEqual([2, 4, 5]);
    expect(lanes.every((lane) => lane.inColumnOrder)).toBe(true);
  });

  it("carries each server's position and what it will never receive", () => {
    const withFacts: ServerEvents = { ...master, position: { 1: 2, 3: 1 }, never: [{ domain: 4, origin_server_id: 9, reason: "not downstream" }] };
    const { lanes } = alignLanes([withFacts]);
    expect([...lanes[0]!.position]).toEqual([[1, 2], [3, 1]]);
    expect(lanes[0]!.never).toEqual([{ domain: 4, origin_server_id: 9, reason: "not downstream" }]);
  });

  it("knows where each GTID sits in every lane", () => {
    const { positions } = alignLanes([master, replica, sameOrder]);
    expect(Object.fromEntries(positions.get("2-1-2")!)).toEqual({ 1: 3, 2: 4, 3: 3 });
    expect(Object.fromEntries(positions.get("3-1-1")!)).toEqual({ 1: 4, 2: 3 });
  });

  it("counts the lanes that hold each GTID", () => {
    const { lanes } = alignLanes([master, replica, sameOrder]);
    const third = lanes[0]!.blocks.find((b) => b.label === "3-1")!;
    expect(third.sharedBy).toBe(2);
    expect(lanes[0]!.blocks.find((b) => b.label === "1-1")!.sharedBy).toBe(3);
  });

  it("sees each domain's order kept while the interleaving differs", () => {
    const alignment = alignLanes([master, replica, sameOrder]);
    expect(alignment.lanes.every((lane) => lane.domainOrderKept)).toBe(true);
    expect(alignment.lanes.map((lane) => lane.sameInterleavingAsFirst)).toEqual([null, false, true]);
    expect(alignment.interleavingsDiffer).toBe(true);
  });

  it("tells a multi-source replica's lane from its master's, though the master's transactions keep their order", () => {
    const masterOfDomain1 = server(1, "m1", ["1-1", "1-2", "1-3"]);
    const multiSource = server(3, "ms", ["1-1", "2-1", "1-2", "2-2", "1-3"]);
    const alignment = alignLanes([masterOfDomain1, multiSource]);
    expect(alignment.lanes[1]!.sameInterleavingAsFirst).toBe(false);
    expect(alignment.lanes[1]!.interleavingNote).toBe(
      "interleaves transactions the first lane does not hold (domain 2)",
    );
    expect(alignment.interleavingsDiffer).toBe(true);
    expect(compareInterleaving(multiSource.transactions.slice().reverse(), masterOfDomain1.transactions.slice().reverse()))
      .toEqual({ same: false, note: "lacks transactions the first lane interleaves (domain 2)" });
  });

  it("does not count a shorter recent window as a different interleaving", () => {
    const alignment = alignLanes([master, sameOrder]);
    expect(alignment.lanes[1]).toMatchObject({ sameInterleavingAsFirst: true, interleavingNote: null });
  });

  it("filters domains but offers every domain seen", () => {
    const alignment = alignLanes([master, replica], [2]);
    expect(alignment.domains).toEqual([1, 2, 3]);
    expect(alignment.lanes[1]!.blocks.map((b) => b.label)).toEqual(["2-1", "2-2"]);
    expect(alignment.interleavingsDiffer).toBe(false);
    expect(alignment.positions.has("1-1-1")).toBe(false);
  });

  it("keeps a server with an error as an empty lane", () => {
    const down: ServerEvents = { registered_server_id: 9, name: "down", transactions: [], error: "unreachable", position: {}, never: [], truncated: false };
    const { lanes } = alignLanes([master, down]);
    expect(lanes[1]).toMatchObject({ name: "down", error: "unreachable", blocks: [], domainOrderKept: true });
    expect(lanes[1]!.sameInterleavingAsFirst).toBe(true);
  });

  it("gives nothing for no servers", () => {
    expect(alignLanes([])).toMatchObject({ lanes: [], domains: [], interleavingsDiffer: false });
  });
});

describe("columnOrder", () => {
  it("keeps every lane's order where the lanes agree, a lane's older transactions first", () => {
    expect(columnOrder([inputs(["1-2", "2-1", "1-3"]), inputs(["1-1", "1-2", "1-3"]), inputs(["2-1"])])).toEqual([
      "1-1", "1-2", "2-1", "1-3",
    ]);
  });

  it("where two lanes interleave the same transactions differently, follows the first lane; each domain in order", () => {
    const order = columnOrder([inputs(["1-1", "2-1", "1-2", "2-2"]), inputs(["2-1", "1-1", "2-2", "1-2"])]);
    expect(order).toEqual(["1-1", "2-1", "1-2", "2-2"]);
  });

  it("takes the earliest committed first among transactions that may go next", () => {
    const a = [{ gtid: "1-1", domain: 1, seqNo: 1, commitTs: 20 }];
    const b = [{ gtid: "2-1", domain: 2, seqNo: 1, commitTs: 10 }];
    expect(columnOrder([a, b])).toEqual(["2-1", "1-1"]);
  });

  it("puts a domain in seq order even when a lane holds it out of order", () => {
    expect(columnOrder([inputs(["1-2", "1-1", "2-5"])])).toEqual(["1-1", "1-2", "2-5"]);
  });

  it("gives no columns for no lanes", () => {
    expect(columnOrder([])).toEqual([]);
    expect(columnOrder([[], []])).toEqual([]);
  });
});

describe("keepsDomainOrder", () => {
  it("fails when a domain goes backwards or repeats", () => {
    expect(keepsDomainOrder([{ domain: 1, seqNo: 2 }, { domain: 2, seqNo: 1 }, { domain: 1, seqNo: 1 }])).toBe(false);
    expect(keepsDomainOrder([{ domain: 1, seqNo: 2 }, { domain: 1, seqNo: 2 }])).toBe(false);
    expect(keepsDomainOrder([{ domain: 1, seqNo: 2 }, { domain: 2, seqNo: 1 }, { domain: 1, seqNo: 5 }])).toBe(true);
  });
});

describe("sameSharedOrder", () => {
  it("compares only the GTIDs both hold", () => {
    const a = [{ gtid: "x" }, { gtid: "y" }, { gtid: "z" }];
    expect(sameSharedOrder(a, [{ gtid: "y" }, { gtid: "z" }, { gtid: "w" }])).toBe(true);
    expect(sameSharedOrder(a, [{ gtid: "z" }, { gtid: "y" }])).toBe(false);
  });
});

// Tests of laying the positions the event stream said over the stored positions matrix.
import { describe, expect, it } from "vitest";
import type { Schemas } from "../api/client";
import {
  LIVE_FRESH_MS,
  forgetPositions,
  overlay,
  recordPosition,
  withLivePositions,
  withLiveServers,
} from "./livePositions";

type Matrix = Schemas["PositionMatrix"];

function cell(gtid: string | null, behind: number) {
  const seqNo = gtid === null ? null : Number(gtid.split("-")[2]);
  return { gtid, seq_no: seqNo, behind_transactions: behind, lag_seconds: null };
}

const cellOf = (matrix: Matrix, index: number, domain: string) => matrix.rows[index]?.cells[domain];

function row(serverId: number, position: string, cells: Record<string, ReturnType<typeof cell>>) {
  return {
    server_id: serverId, name: `s${serverId}`, health: "healthy", gtid_current_pos: position, gtid_binlog_pos: position,
    cells, ahead_of_all: false, ahead_in_own_domains: false,
  };
}

const stored: Matrix = {
  cluster_id: 1,
  domains: [1, 2],
  most_advanced: "1-1-10,2-2-20",
  could_be_master: [1],
  rows: [
    row(1, "1-1-10,2-2-20", { "1": cell("1-1-10", 0), "2": cell("2-2-20", 0) }),
    row(2, "1-1-8,2-2-20", { "1": cell("1-1-8", 2), "2": cell("2-2-20", 0) }),
    row(3, "2-2-15", { "1": cell(null, 10), "2": cell("2-2-15", 5) }),
  ],
};

const said = (entries: [number, number, string, number][]) => {
  const seen = new Map(
    entries.map(([server, domain, gtid, at]) => {
      const said = { gtid, seqNo: Number(gtid.split("-")[2]), at };
      return [`${server}:${domain}`, said];
    }),
  );
  return (server: number, domain: number) => seen.get(`${server}:${domain}`);
};

describe("overlay", () => {
  it("moves a cell the stream said newer, with its row's position, its domain's behind and the most advanced", () => {
    const moved = overlay(stored, said([[1, 1, "1-1-14", 0]]), 100);
    expect(cellOf(moved, 0, "1")).toMatchObject({ gtid: "1-1-14", seq_no: 14, behind_transactions: 0 });
    expect(moved.rows[0]?.gtid_current_pos).toBe("1-1-14,2-2-20");
    expect(cellOf(moved, 1, "1")?.behind_transactions).toBe(6);
    expect(cellOf(moved, 2, "1")?.behind_transactions).toBe(14);
    expect(moved.most_advanced).toBe("1-1-14,2-2-20");
    expect(cellOf(moved, 1, "2")).toBe(cellOf(stored, 1, "2"));
    expect(moved.could_be_master).toEqual([1]);
  });
  it("gives a server its first GTID in a domain", () => {
    const moved = overlay(stored, said([[3, 1, "1-1-10", 0]]), 0);
    expect(cellOf(moved, 2, "1")).toMatchObject({ gtid: "1-1-10", seq_no: 10, behind_transactions: 0 });
    expect(moved.rows[2]?.gtid_current_pos).toBe("1-1-10,2-2-15");
  });
  it("keeps a matrix already as new as what the stream said, the same object", () => {
    expect(overlay(stored, said([[1, 1, "1-1-10", 0], [2, 1, "1-1-7", 0]]), 0)).toBe(stored);
  });
  it("lets the stored matrix win once what the stream said is no longer fresh", () => {
    expect(overlay(stored, said([[1, 1, "1-1-14", 0]]), LIVE_FRESH_MS + 1)).toBe(stored);
  });
});

describe("withLivePositions", () => {
  it("lays a cluster's recorded events over a matrix fetched after them, and forgets them with the page", () => {
    recordPosition(1, { event: "position", server_id: 2, domain: 1, gtid: "1-1-12", seq_no: 12 }, 1000);
    recordPosition(2, { event: "position", server_id: 2, domain: 1, gtid: "1-1-99", seq_no: 99 }, 1000);
    const fetched = withLivePositions(1, stored, 1500);
    expect(cellOf(fetched, 1, "1")).toMatchObject({ gtid: "1-1-12", behind_transactions: 0 });
    expect(cellOf(fetched, 0, "1")?.behind_transactions).toBe(2);
    forgetPositions(1);
    expect(withLivePositions(1, stored, 1500)).toBe(stored);
    forgetPositions(2);
  });
});

describe("withLiveServers", () => {
  it("moves a server's gtid_current_pos in the domains the stream said newer, and only those", () => {
    recordPosition(3, { event: "position", server_id: 7, domain: 2, gtid: "2-1-50", seq_no: 50 }, 0);
    recordPosition(3, { event: "position", server_id: 7, domain: 1, gtid: "1-1-3", seq_no: 3 }, 0);
    const servers = [
      { id: 7, gtid_current_pos: "1-1-5,2-1-40" },
      { id: 8, gtid_current_pos: "1-1-5" },
    ];
    recordPosition(3, { event: "position", server_id: 7, domain: 2, gtid: "2-1-45", seq_no: 45 }, 5); // never back
    const moved = withLiveServers(3, servers, (s) => s.id, 10);
    expect(moved.map((s) => s.gtid_current_pos)).toEqual(["1-1-5,2-1-50", "1-1-5"]);
    expect(moved[1]).toBe(servers[1]);
    expect(withLiveServers(3, servers, (s) => s.id, LIVE_FRESH_MS + 1)).toBe(servers);
    forgetPositions(3);
  });
});

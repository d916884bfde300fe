// Tests of commit group marks and of where a picked GTID sits in a lane.
import { describe, expect, it } from "vitest";
import type { Lane, LaneBlock } from "./align";
import { commitGroupMarks, pickedPlace } from "./commitGroups";

const block = (gtid: string, index: number, commitId: number | null): LaneBlock => {
  const [domain, , seq] = gtid.split("-").map(Number) as [number, number, number];
  return { gtid, domain, seqNo: seq, originServerId: 1, label: `${domain}-${seq}`, index, column: index, commitId, sharedBy: 1 };
};
const lane = (serverId: number, blocks: [string, number | null][]): Lane => ({
  serverId, name: `s${serverId}`, error: null, blocks: blocks.map(([g, c], i) => block(g, i, c)), domainOrderKept: true,
  inColumnOrder: true, position: new Map(), never: [],
  sameInterleavingAsFirst: null,
  interleavingNote: null,
  overlapsFirst: true,
  behind: {},
  truncated: false,
});

describe("commitGroupMarks", () => {
  it("takes the groups from the master's lane, a run of three as start, middle, end", () => {
    const master = lane(1, [["1-1-1", 4], ["1-1-2", 4], ["2-1-1", 4], ["1-1-3", 5], ["1-1-4", null]]);
    const replica = lane(2, [["1-1-1", 9], ["1-1-3", 9], ["1-1-2", 10]]);
    const marks = commitGroupMarks([master, replica], [1]);
    expect(marks.get(1)!.map((m) => m?.place ?? null)).toEqual(["start", "middle", "end", null, null]);
    expect(marks.get(2)!.map((m) => m && `${m.id}/${m.size}/${m.place}`)).toEqual(["1:4/3/alone", null, "1:4/3/alone"]);
  });

  it("joins members only in neighbouring columns: another lane's transaction between them parts them", () => {
    const master = lane(1, [["1-1-1", 4], ["1-1-2", 4]]);
    const apart = { ...master, blocks: master.blocks.map((b, i) => ({ ...b, column: i * 2 })) };
    expect(commitGroupMarks([apart], [1]).get(1)!.map((m) => m?.place)).toEqual(["alone", "alone"]);
  });

  it("without a known master, each lane's own commit groups", () => {
    const replica = lane(2, [["1-1-1", 9], ["1-1-3", 9], ["1-1-2", 10]]);
    expect(commitGroupMarks([replica], []).get(2)!.map((m) => m?.id ?? null)).toEqual(["2:9", "2:9", null]);
  });
});

describe("pickedPlace", () => {
  const l = lane(1, [["1-1-5", 1], ["2-1-3", 2], ["1-1-6", 3]]);
  it("says where it is, not here yet, or not among those shown", () => {
    expect(pickedPlace(l, "1-1-6").text).toBe("#3 of 3");
    expect(pickedPlace(l, "1-1-7").text).toBe("not here yet (at seq 6 of domain 1)");
    expect(pickedPlace(l, "3-1-1").text).toBe("not here yet");
    expect(pickedPlace(l, "1-1-2").text).toBe("not among the transactions shown (older, or not on this server)");
  });
});

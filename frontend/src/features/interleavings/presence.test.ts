// Tests of where a lane stands on a GTID: here, never (the backend's reason: a filter or not downstream), not yet
// (behind it in its domain), older than shown, or unknown when the server's binlog could not be read.
import { describe, expect, it } from "vitest";
import type { Lane, LaneBlock } from "./align";
import { presenceOf } from "./presence";

const block = (gtid: string, index: number): LaneBlock => {
  const [domain, origin, seq] = gtid.split("-").map(Number) as [number, number, number];
  return { gtid, domain, seqNo: seq, originServerId: origin, label: `${domain}-${seq}`, index, column: index, commitId: null, sharedBy: 1 };
};
const lane = (gtids: string[], facts: Partial<Pick<Lane, "error" | "never" | "position">> = {}) => ({
  blocks: gtids.map(block),
  error: null,
  never: [],
  position: new Map<number, number>(),
  ...facts,
});

describe("presenceOf", () => {
  const replica = lane(["1-1-5", "2-2-3", "1-1-6"], {
    position: new Map([[1, 6], [2, 3]]),
    never: [{ domain: 7, origin_server_id: 2, reason: "domain 7 does not reach it: r's connection m2 filters it out (ignore_domain_ids)" }],
  });

  it("gives the place in the server's binlog when it holds it", () => {
    expect(presenceOf(replica, "2-2-3")).toMatchObject({ kind: "here", text: "#2 of 3" });
  });

  it("says never, with the backend's reason, for a domain and origin the server will never receive", () => {
    expect(presenceOf(replica, "7-2-1")).toEqual({
      kind: "never",
      reason: "domain 7 does not reach it: r's connection m2 filters it out (ignore_domain_ids)",
      text: "never here: domain 7 does not reach it: r's connection m2 filters it out (ignore_domain_ids)",
    });
    // The same domain from another origin is not judged by that entry.
    expect(presenceOf(replica, "7-3-1").kind).toBe("not-yet");
  });

  it("says not yet when the server is behind it in its domain (by its transactions or its position)", () => {
    expect(presenceOf(replica, "1-1-7")).toEqual({ kind: "not-yet", text: "not here yet (at seq 6 of domain 1)" });
    expect(presenceOf(lane([], { position: new Map([[1, 9]]) }), "1-1-10").text).toBe("not here yet (at seq 9 of domain 1)");
    expect(presenceOf(lane([]), "3-1-1")).toEqual({ kind: "not-yet", text: "not here yet" });
  });

  it("says older when the server is past it but it is not among those shown", () => {
    expect(presenceOf(replica, "1-1-2").kind).toBe("older");
  });

  it("says unknown for a server whose binlog could not be read, unless it will never receive it", () => {
    const down = lane([], { error: "no answer within 10 s", never: replica.never });
    expect(presenceOf(down, "1-1-1")).toEqual({ kind: "unknown", text: "unknown: its binlog could not be read (no answer within 10 s)" });
    expect(presenceOf(down, "7-2-1").kind).toBe("never");
  });
});

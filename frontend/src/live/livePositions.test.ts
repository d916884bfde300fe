// Tests of laying the positions the event stream said over the topology's servers.
import { describe, expect, it } from "vitest";
import { LIVE_FRESH_MS, forgetPositions, recordPosition, withLiveServers } from "./livePositions";

describe("withLiveServers", () => {
  it("moves a server's gtid_current_pos in the domains the stream said newer, and only those", () => {
    recordPosition(3, { event: "position", registered_server_id: 7, domain: 2, gtid: "2-1-50", seq_no: 50 }, 0);
    recordPosition(3, { event: "position", registered_server_id: 7, domain: 1, gtid: "1-1-3", seq_no: 3 }, 0);
    const servers = [
      { id: 7, gtid_current_pos: "1-1-5,2-1-40" },
      { id: 8, gtid_current_pos: "1-1-5" },
    ];
    recordPosition(3, { event: "position", registered_server_id: 7, domain: 2, gtid: "2-1-45", seq_no: 45 }, 5); // never back
    const moved = withLiveServers(3, servers, (s) => s.id, 10);
    expect(moved.map((s) => s.gtid_current_pos)).toEqual(["1-1-5,2-1-50", "1-1-5"]);
    expect(moved[1]).toBe(servers[1]);
    expect(withLiveServers(3, servers, (s) => s.id, LIVE_FRESH_MS + 1)).toBe(servers);
    forgetPositions(3);
  });
});

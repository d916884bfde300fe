// The server page's facts: positions split per domain (all three, a missing one said as such), and which operations
// and audit rows concern the server.
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { operation } from "../../test/fixtures";
import { auditTouches, domainPositions, operationTouches } from "./serverFacts";

describe("domainPositions", () => {
  it("gives one row per domain of any position", () => {
    expect(domainPositions({ gtid_binlog_pos: "1-1-45,2-1-20", gtid_slave_pos: "3-9-7", gtid_current_pos: "1-1-45,2-1-20,3-9-7" })).toEqual([
      { domain: 1, binlog: "1-1-45", slave: null, current: "1-1-45" },
      { domain: 2, binlog: "2-1-20", slave: null, current: "2-1-20" },
      { domain: 3, binlog: null, slave: "3-9-7", current: "3-9-7" },
    ]);
  });
  it("is empty before the first poll and skips what is not a GTID", () => {
    expect(domainPositions({ gtid_binlog_pos: null, gtid_slave_pos: "", gtid_current_pos: "garbage" })).toEqual([]);
  });
});

describe("what touches a server", () => {
  it("finds operations by a server parameter or as old or new master", () => {
    expect(operationTouches(operation({ params: { candidate_registered_server_id: 3 } } as never), 3)).toBe(true);
    expect(operationTouches(operation({ result: { new_master_registered_server_id: 3 } } as never), 3)).toBe(true);
    expect(operationTouches(operation({ params: { candidate_registered_server_id: 2 } } as never), 3)).toBe(false);
  });
  it("finds audit rows whose path names the server", () => {
    const entry = (serverId: string) => ({ details: { path_params: { cluster_id: "1", registered_server_id: serverId } } }) as unknown as Schemas["AuditEntryRead"];
    expect(auditTouches(entry("3"), 3)).toBe(true);
    expect(auditTouches(entry("30"), 3)).toBe(false);
    // A row written before the path parameter was renamed.
    const older = { details: { path_params: { cluster_id: "1", server_id: "3" } } } as unknown as Schemas["AuditEntryRead"];
    expect(auditTouches(older, 3)).toBe(true);
  });
});

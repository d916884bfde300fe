// The dashboard's GTID reading: well-formed GTIDs and positions read back, anything malformed is left out whole.
import { describe, expect, it } from "vitest";
import { formatPosition, parseGtid, parsePosition } from "./gtid";

describe("gtid", () => {
  it("reads a GTID's three numbers, and nothing that is not one", () => {
    expect(parseGtid(" 1-2-45 ")).toEqual({ domain: 1, server: 2, seq: 45, text: "1-2-45" });
    for (const bad of ["", "1-2", "1-2-x", "a-b-c", "1-2-3-4", "-1-2-3", "1-2-99999999999999999999"]) {
      expect(parseGtid(bad)).toBeNull();
    }
  });

  it("reads a position per domain, skipping malformed parts, and writes it back in domain order", () => {
    const read = parsePosition("2-1-20, 1-1-45,junk,3-3-");
    expect([...read.keys()]).toEqual([2, 1]);
    expect(read.get(1)?.seq).toBe(45);
    expect(formatPosition(read)).toBe("1-1-45,2-1-20");
    expect(parsePosition(null).size).toBe(0);
    expect(parsePosition(undefined).size).toBe(0);
  });
});

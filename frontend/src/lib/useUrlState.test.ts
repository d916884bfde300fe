// Tests of the URL list parsing behind the domain filter.
import { describe, expect, it } from "vitest";
import { parseIntList } from "./useUrlState";

describe("parseIntList", () => {
  it("reads sorted unique integers and drops junk", () => {
    expect(parseIntList("3,1, 2,x,-1,1")).toEqual([1, 2, 3]);
    expect(parseIntList(null)).toEqual([]);
    expect(parseIntList("")).toEqual([]);
  });
});

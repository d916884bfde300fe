// Tests of the hovered GTID: set and cleared by real pointer moves, kept when the content moves under a still
// pointer (a refresh re-rendering or shifting the blocks).
import { describe, expect, it } from "vitest";
import { NO_HOVER, hoverReducer } from "./hover";

describe("hoverReducer", () => {
  it("follows the pointer onto a transaction, off it and out of the lanes", () => {
    const over = hoverReducer(NO_HOVER, { kind: "move", gtid: "1-1-5", x: 10, y: 20 });
    expect(over.gtid).toBe("1-1-5");
    expect(hoverReducer(over, { kind: "move", gtid: "2-1-3", x: 90, y: 20 }).gtid).toBe("2-1-3");
    expect(hoverReducer(over, { kind: "move", gtid: null, x: 50, y: 20 }).gtid).toBeNull();
    expect(hoverReducer(over, { kind: "leave", x: 10, y: 400 }).gtid).toBeNull();
  });

  it("keeps the GTID when a refresh moves another block under the still pointer, or makes it leave", () => {
    const over = hoverReducer(NO_HOVER, { kind: "move", gtid: "1-1-5", x: 10, y: 20 });
    expect(hoverReducer(over, { kind: "move", gtid: "1-1-6", x: 10, y: 20 })).toBe(over);
    expect(hoverReducer(over, { kind: "leave", x: 10, y: 20 })).toBe(over);
  });
});

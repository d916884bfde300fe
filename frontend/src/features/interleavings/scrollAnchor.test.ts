// Tests of where the lanes scroll when they change: at the newest end while the user is there (on load too), on the
// column they look at once they scrolled away, at the oldest end when that column has left the window.
import { describe, expect, it } from "vitest";
import { anchorAt, isAtEnd, scrollTarget } from "./scrollAnchor";

const columnOf = (columns: string[]) => (gtid: string) => {
  const i = columns.indexOf(gtid);
  return i < 0 ? undefined : i;
};

describe("isAtEnd", () => {
  it("counts the last few pixels as the end", () => {
    expect(isAtEnd(600, 400, 1000)).toBe(true);
    expect(isAtEnd(597, 400, 1000)).toBe(true);
    expect(isAtEnd(500, 400, 1000)).toBe(false);
    expect(isAtEnd(0, 400, 300)).toBe(true);
  });
});

describe("scrollTarget", () => {
  it("keeps the newest in view on load and after a refresh while following", () => {
    expect(scrollTarget({ follow: true, anchor: null, columnOf: columnOf([]), columnPx: 80, maxScroll: 1200 })).toBe(1200);
    expect(scrollTarget({ follow: true, anchor: null, columnOf: columnOf([]), columnPx: 80, maxScroll: -5 })).toBe(0);
  });

  it("keeps the user's place on the same GTID when they scrolled away, as new columns come and old ones go", () => {
    const before = ["a", "b", "c", "d", "e", "f"];
    const anchor = anchorAt(170, before, 80)!; // column c, 10 px into it
    expect(anchor).toEqual({ gtid: "c", delta: 10 });
    const after = ["c", "d", "e", "f", "g", "h", "i"]; // a and b left, g, h and i came
    expect(scrollTarget({ follow: false, anchor, columnOf: columnOf(after), columnPx: 80, maxScroll: 400 })).toBe(10);
  });

  it("goes to the oldest end when the column they looked at has left the window, and leaves a fresh view alone", () => {
    const anchor = { gtid: "a", delta: 0 };
    expect(scrollTarget({ follow: false, anchor, columnOf: columnOf(["x", "y"]), columnPx: 80, maxScroll: 400 })).toBe(0);
    expect(scrollTarget({ follow: false, anchor: null, columnOf: columnOf(["x"]), columnPx: 80, maxScroll: 400 })).toBeNull();
  });

  it("has no anchor without columns and clamps one past the last column", () => {
    expect(anchorAt(100, [], 80)).toBeNull();
    expect(anchorAt(10_000, ["a", "b"], 80)).toEqual({ gtid: "b", delta: 10_000 - 80 });
  });
});

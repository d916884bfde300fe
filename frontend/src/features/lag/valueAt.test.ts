// A change-only series read at any instant.
import { describe, expect, it } from "vitest";
import { pointAt } from "./valueAt";

const points = [10, 20, 30].map((t, i) => ({ t, seconds: i, transactions: i * 10 }));

describe("pointAt", () => {
  it("gives the newest point at or before the instant: each value holds until the next", () => {
    expect(pointAt(points, 10)?.seconds).toBe(0);
    expect(pointAt(points, 25)?.seconds).toBe(1);
    expect(pointAt(points, 99)?.seconds).toBe(2);
  });

  it("gives nothing before the first point", () => {
    expect(pointAt(points, 9)).toBeNull();
    expect(pointAt([], 9)).toBeNull();
  });
});

// Tests of lag, duration and name formatting.
import { describe, expect, it } from "vitest";
import { formatDuration, formatLag, formatLagSeconds, formatLagTransactions, humanize, lagLevel, worstLag } from "./format";

describe("formatLagSeconds", () => {
  it.each([
    [null, "—"],
    [undefined, "—"],
    [Number.NaN, "—"],
    [0, "0 s"],
    [-0.5, "0 s"],
    [0.0004, "0 ms"],
    [0.85, "850 ms"],
    [4.23, "4.2 s"],
    [42.4, "42 s"],
    [185, "3 min 05 s"],
    [7380, "2 h 03 min"],
  ])("%s → %s", (input, expected) => {
    expect(formatLagSeconds(input)).toBe(expected);
  });
});

describe("formatLagTransactions", () => {
  it("writes the unit and groups thousands", () => {
    expect(formatLagTransactions(0)).toBe("0 txn");
    expect(formatLagTransactions(1)).toBe("1 txn");
    expect(formatLagTransactions(12345)).toBe("12,345 txn");
    expect(formatLagTransactions(null)).toBe("—");
  });
});

describe("formatLag", () => {
  it("joins seconds and transactions", () => {
    expect(formatLag({ seconds: 4.2, transactions: 12 })).toBe("4.2 s · 12 txn");
    expect(formatLag(null)).toBe("no lag reported");
  });
});

describe("lagLevel", () => {
  it("is none, low or high by either figure", () => {
    expect(lagLevel({ seconds: 0, transactions: 0 })).toBe("none");
    expect(lagLevel({ seconds: 0.2, transactions: 0 })).toBe("low");
    expect(lagLevel({ seconds: 0, transactions: 1000 })).toBe("high");
    expect(lagLevel({ seconds: 12, transactions: 3 })).toBe("high");
    expect(lagLevel(undefined)).toBe("none");
  });
});

describe("worstLag", () => {
  it("takes the maximum of each figure separately", () => {
    expect(
      worstLag([
        { seconds: 1, transactions: 50 },
        { seconds: 3, transactions: 2 },
      ]),
    ).toEqual({ seconds: 3, transactions: 50 });
    expect(worstLag([])).toBeNull();
  });
});

describe("formatDuration and humanize", () => {
  it("formats durations", () => {
    expect(formatDuration(0.0123)).toBe("12.3 ms");
    expect(formatDuration(1.25)).toBe("1.250 s");
    expect(formatDuration(123)).toBe("2 min 03 s");
  });
  it("humanizes step names", () => {
    expect(humanize("old_master_read_only")).toBe("Old master read only");
  });
});

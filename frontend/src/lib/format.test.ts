// Tests of lag, duration and name formatting.
import { describe, expect, it } from "vitest";
import { connectionName, formatDuration, formatLagSeconds, formatLagTransactions, formatTime, humanize } from "./format";

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

describe("formatTime", () => {
  it("writes every time one way, with its zone: UTC unless another is asked for", () => {
    expect(formatTime("2026-11-28T13:33:08.4Z", "UTC")).toBe("2026-11-28 13:33:08 UTC");
    expect(formatTime("2026-11-28T13:33:08Z", "Europe/Berlin")).toBe("2026-11-28 14:33:08 GMT+1");
    expect(formatTime("2026-07-01T00:00:00Z", "America/New_York")).toBe("2026-06-30 20:00:00 GMT-4");
    expect(formatTime(null)).toBe("—");
    expect(formatTime("not a time")).toBe("not a time");
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

describe("connectionName", () => {
  it("quotes a named connection and says MariaDB's unnamed one is the default connection", () => {
    expect(connectionName("m1")).toBe("'m1'");
    expect(connectionName("")).toBe("(default connection)");
    expect(connectionName(null)).toBe("(default connection)");
  });
});

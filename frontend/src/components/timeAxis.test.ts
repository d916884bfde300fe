// The history charts' time axes: ticks over the whole range, dates on ranges longer than a few hours, and the
// time zone named.
import { describe, expect, it } from "vitest";
import { instantLabel, timeLabel, timeTicks, zoneLabel } from "./timeAxis";

const AT = Date.parse("2026-11-26T03:48:12Z");
const HOUR = 3_600_000;

describe("timeTicks", () => {
  it("spreads six ticks from the range's start to its end", () => {
    expect(timeTicks(0, 5000)).toEqual([0, 1000, 2000, 3000, 4000, 5000]);
  });
});

describe("timeLabel", () => {
  it("reads the time of day, seconds included, over a few hours", () => {
    expect(timeLabel(AT, HOUR, "UTC")).toBe("03:48:12");
  });

  it("adds the date over longer ranges, so a 24 h axis does not read 03:48 … 03:48", () => {
    expect(timeLabel(AT, 24 * HOUR, "UTC")).toBe("26 Nov 03:48");
    expect(timeLabel(AT - 24 * HOUR, 24 * HOUR, "UTC")).toBe("25 Nov 03:48");
  });

  it("reads the date alone over weeks", () => {
    expect(timeLabel(AT, 30 * 24 * HOUR, "UTC")).toBe("26 Nov");
  });

  it("is in the time zone asked for", () => {
    expect(timeLabel(AT, 24 * HOUR, "Asia/Tokyo")).toBe("26 Nov 12:48");
    expect(instantLabel(AT, "America/New_York")).toBe("25 Nov 22:48:12");
  });
});

describe("zoneLabel", () => {
  it("names UTC as such, and another zone with its offset", () => {
    expect(zoneLabel(AT, "UTC")).toBe("UTC");
    expect(zoneLabel(AT, "Europe/Paris")).toBe("Europe/Paris (GMT+1)");
  });
});

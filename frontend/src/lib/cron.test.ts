// Tests of the cron preview: plain words, next runs in a time zone (DST included), and clear refusals.
import { describe, expect, it } from "vitest";
import { formatRunTime, isTimeZone, previewCron } from "./cron";

const FROM = new Date("2026-11-21T12:00:00Z"); // a Saturday

describe("previewCron", () => {
  it("says a weekday schedule in words and gives its next runs in the zone", () => {
    const preview = previewCron("30 2 * * 1-5", "Europe/Berlin", FROM, 3);
    expect(preview).toEqual({
      ok: true,
      words: "At 02:30, Monday through Friday (Europe/Berlin)",
      next: [new Date("2026-11-23T01:30:00Z"), new Date("2026-11-24T01:30:00Z"), new Date("2026-11-25T01:30:00Z")],
    });
  });

  it("follows daylight saving time", () => {
    const preview = previewCron("0 3 * * *", "Europe/Berlin", new Date("2026-03-28T12:00:00Z"), 2);
    expect(preview.ok && preview.next.map((d) => d.toISOString())).toEqual([
      "2026-03-29T01:00:00.000Z", // 03:00 CEST, the day clocks go forward
      "2026-03-30T01:00:00.000Z",
    ]);
  });

  it("describes steps and lists", () => {
    const preview = previewCron("*/15 * * * *", "UTC", FROM, 2);
    expect(preview).toMatchObject({ ok: true, words: "Every 15 minutes (UTC)" });
    expect(preview.ok && preview.next.map((d) => d.toISOString())).toEqual(["2026-11-21T12:15:00.000Z", "2026-11-21T12:30:00.000Z"]);
  });

  it("refuses the wrong number of fields, bad values and unknown zones", () => {
    expect(previewCron("0 3 * *", "UTC", FROM)).toEqual({
      ok: false,
      error: "a cron expression has 5 fields (minute hour day month weekday); this has 4",
    });
    expect(previewCron("", "UTC", FROM).ok).toBe(false);
    expect(previewCron("61 3 * * *", "UTC", FROM).ok).toBe(false);
    expect(previewCron("0 3 * * *", "Mars/Olympus", FROM)).toEqual({ ok: false, error: 'unknown time zone "Mars/Olympus"' });
  });
});

describe("time zones", () => {
  it("knows IANA zones", () => {
    expect(isTimeZone("Europe/Berlin")).toBe(true);
    expect(isTimeZone("Nowhere/Else")).toBe(false);
  });
  it("formats a run time in its zone and in UTC", () => {
    expect(formatRunTime(new Date("2026-11-23T01:30:00Z"), "Europe/Berlin")).toBe("Mon 23 Nov 2026, 02:30 Europe/Berlin (01:30 UTC)");
    expect(formatRunTime(new Date("2026-11-23T01:30:00Z"), "UTC")).toBe("Mon 23 Nov 2026, 01:30 UTC");
  });
});

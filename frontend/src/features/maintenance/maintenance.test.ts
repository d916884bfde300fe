// The maintenance helpers: a maintenance past its end is over at once, its end is said as a countdown, and the form
// sends a reason and a duration within 1 s to 7 days, refusing anything else with a sentence.
import { describe, expect, it } from "vitest";
import { endsIn, inMaintenance, maintenanceBody, ownerAndReason } from "./maintenance";

const NOW = Date.parse("2026-11-26T14:00:00Z");
const detail = (until: string | null) => ({ owner: "alice", reason: "disk swap", since: "2026-11-26T13:00:00Z", until });

describe("inMaintenance", () => {
  it("holds until the end, and not a moment after", () => {
    const server = { maintenance: true, maintenance_detail: detail("2026-11-26T14:00:05Z") };
    expect(inMaintenance(server, NOW)).toBe(true);
    expect(inMaintenance(server, NOW + 5000)).toBe(false);
  });
  it("follows the API's flag, and keeps one with no end", () => {
    expect(inMaintenance({ maintenance: false, maintenance_detail: null }, NOW)).toBe(false);
    expect(inMaintenance({ maintenance: true, maintenance_detail: detail(null) }, NOW)).toBe(true);
  });
});

describe("endsIn and ownerAndReason", () => {
  it("counts down in words", () => {
    expect(endsIn(detail("2026-11-26T16:03:00Z"), NOW)).toBe("ends in 2 h 03 min");
    expect(endsIn(detail("2026-11-26T14:00:04Z"), NOW)).toBe("ends in 4.0 s");
    expect(endsIn(detail(null), NOW)).toBe("no end set");
  });
  it("names the owner and the reason, or says they were not recorded", () => {
    expect(ownerAndReason(detail(null))).toBe("by alice: disk swap");
    expect(ownerAndReason({ owner: null, reason: "set before reasons were recorded", since: null, until: null })).toBe(
      "by an unrecorded owner: set before reasons were recorded",
    );
  });
});

describe("maintenanceBody", () => {
  it("sends the trimmed reason and the duration in seconds", () => {
    expect(maintenanceBody({ reason: " disk swap ", amount: "2", unit: "hours" })).toEqual({
      ok: true, body: { maintenance: true, reason: "disk swap", duration_s: 7200 },
    });
  });
  it("refuses a missing reason, a bad amount and more than 7 days", () => {
    expect(maintenanceBody({ reason: " ", amount: "2", unit: "hours" })).toEqual({ ok: false, error: "Say why the server goes into maintenance." });
    expect(maintenanceBody({ reason: "r", amount: "0", unit: "hours" }).ok).toBe(false);
    expect(maintenanceBody({ reason: "r", amount: "1.5", unit: "hours" }).ok).toBe(false);
    expect(maintenanceBody({ reason: "r", amount: "8", unit: "days" })).toEqual({ ok: false, error: "A maintenance lasts at most 7 days." });
    expect(maintenanceBody({ reason: "r", amount: "7", unit: "days" }).ok).toBe(true);
  });
});

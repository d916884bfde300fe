// A lifetime becomes an `expires_at` counted from now (or none), and a token's state follows its dates.
import { describe, expect, it } from "vitest";
import { expiresAt, LIFETIMES, tokenState } from "./tokenExpiry";

const NOW = Date.parse("2026-11-26T12:00:00Z");
const lifetime = (label: string) => LIFETIMES.find((l) => l.label === label)!;

describe("token lifetimes", () => {
  it("counts a lifetime from now, and 'never' sends no expiry", () => {
    expect(expiresAt(lifetime("1 day"), NOW)).toBe("2026-11-27T12:00:00.000Z");
    expect(expiresAt(lifetime("8 hours"), NOW)).toBe("2026-11-26T20:00:00.000Z");
    expect(expiresAt(lifetime("never (not advised)"), NOW)).toBeNull();
  });

  it("reads a token as revoked, expired or active", () => {
    expect(tokenState({ revoked_at: "2026-11-01T00:00:00Z", expires_at: null }, NOW)).toBe("revoked");
    expect(tokenState({ revoked_at: null, expires_at: "2026-11-26T11:59:59Z" }, NOW)).toBe("expired");
    expect(tokenState({ revoked_at: null, expires_at: "2026-11-26T12:00:01Z" }, NOW)).toBe("active");
    expect(tokenState({ revoked_at: null, expires_at: null }, NOW)).toBe("active");
  });
});

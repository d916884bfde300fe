// A new token's lifetime, chosen from a short list (docs/security.md: give every token an expiry), and a token's
// state read from its dates: active, expired or revoked.
import type { Token } from "../../api/tokens";

export interface Lifetime {
  label: string;
  /** Milliseconds from creation; null: it does not expire. */
  ms: number | null;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export const LIFETIMES: readonly Lifetime[] = [
  { label: "8 hours", ms: 8 * HOUR },
  { label: "1 day", ms: DAY },
  { label: "7 days", ms: 7 * DAY },
  { label: "30 days", ms: 30 * DAY },
  { label: "90 days", ms: 90 * DAY },
  { label: "1 year", ms: 365 * DAY },
  { label: "never (not advised)", ms: null },
];

export const DEFAULT_LIFETIME = "30 days";

/** The `expires_at` to send for a lifetime chosen at `now`. */
export function expiresAt(lifetime: Lifetime, now: number = Date.now()): string | null {
  return lifetime.ms === null ? null : new Date(now + lifetime.ms).toISOString();
}

export type TokenState = "active" | "expired" | "revoked";

export function tokenState(token: Pick<Token, "revoked_at" | "expires_at">, now: number = Date.now()): TokenState {
  if (token.revoked_at) return "revoked";
  if (token.expires_at && Date.parse(token.expires_at) <= now) return "expired";
  return "active";
}

// A server's maintenance read for people, and the maintenance form's checks — pure, tested. A maintenance ends by
// itself at its `until`: past it, the server is shown out of maintenance at once (the API says the same; the list
// refreshes on the `maintenance` event the worker sends when it records the end).
import type { Schemas } from "../../api/client";
import { formatLagSeconds } from "../../lib/format";

export type MaintenanceDetail = Schemas["MaintenanceRead"];

/** What the API allows: 1 s to 7 days (backend schemas/server.py MAINTENANCE_MIN_S / MAINTENANCE_MAX_S). */
export const MAINTENANCE_MIN_S = 1;
export const MAINTENANCE_MAX_S = 7 * 24 * 3600;

export const UNITS = { seconds: 1, minutes: 60, hours: 3600, days: 86_400 } as const;
export type Unit = keyof typeof UNITS;

/** In maintenance at `now`: the API says so and its end (if any) is still ahead. */
export function inMaintenance(
  server: { maintenance: boolean; maintenance_detail?: MaintenanceDetail | null },
  now: number,
): boolean {
  if (!server.maintenance) return false;
  const until = server.maintenance_detail?.until;
  return until == null || Date.parse(until) > now;
}

/** "ends in 2 h 03 min", "ends in 4.0 s", or "no end set" (set before ends were recorded). */
export function endsIn(detail: MaintenanceDetail | null | undefined, now: number): string {
  const until = detail?.until;
  if (until == null) return "no end set";
  const seconds = Math.max(0, (Date.parse(until) - now) / 1000);
  return `ends in ${formatLagSeconds(Math.ceil(seconds))}`;
}

/** "by alice: disk swap" (owner and reason as recorded; older ones may lack either). */
export function ownerAndReason(detail: MaintenanceDetail | null | undefined): string {
  const owner = detail?.owner ?? "an unrecorded owner";
  return `by ${owner}: ${detail?.reason ?? "no reason recorded"}`;
}

export interface MaintenanceInput {
  reason: string;
  amount: string;
  unit: Unit;
}

/** The request body for the form's values, or why they cannot be sent. */
export function maintenanceBody(
  input: MaintenanceInput,
): { ok: true; body: { maintenance: true; reason: string; duration_s: number } } | { ok: false; error: string } {
  const reason = input.reason.trim();
  if (!reason) return { ok: false, error: "Say why the server goes into maintenance." };
  const amount = Number(input.amount);
  if (!Number.isInteger(amount) || amount < 1) return { ok: false, error: "The duration is a whole number, at least 1." };
  const seconds = amount * UNITS[input.unit];
  if (seconds < MAINTENANCE_MIN_S || seconds > MAINTENANCE_MAX_S) {
    return { ok: false, error: "A maintenance lasts at most 7 days." };
  }
  return { ok: true, body: { maintenance: true, reason, duration_s: seconds } };
}

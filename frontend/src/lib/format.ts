// Formatting of lag, durations and times for people: units always written, no colour needed to read them.
import { formatZone } from "./timeZone";

/** Seconds of lag: "0 s", "850 ms", "4.2 s", "3 min 05 s", "2 h 03 min"; null/undefined/NaN: "—". */
export function formatLagSeconds(seconds: number | null | undefined): string {
  if (seconds == null || Number.isNaN(seconds)) return "—";
  const s = Math.max(0, seconds);
  if (s === 0) return "0 s";
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) {
    const minutes = Math.floor(s / 60);
    return `${minutes} min ${String(Math.floor(s % 60)).padStart(2, "0")} s`;
  }
  const hours = Math.floor(s / 3600);
  return `${hours} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} min`;
}

/** Transactions behind: "0 txn", "1 txn", "12,345 txn". */
export function formatLagTransactions(transactions: number | null | undefined): string {
  if (transactions == null || Number.isNaN(transactions)) return "—";
  return `${Math.max(0, Math.round(transactions)).toLocaleString("en-US")} txn`;
}

/** The lag levels the API judges (services/lag.py: against the connection's configured delay); the dashboard shows
 * the API's level and words and never judges lag itself. */
export type LagLevel = "none" | "low" | "high";

/** A duration in seconds: "12.3 ms", "1.250 s", "2 min 03 s". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds == null || Number.isNaN(seconds)) return "—";
  if (seconds < 1) return `${(seconds * 1000).toFixed(1)} ms`;
  if (seconds < 60) return `${seconds.toFixed(3)} s`;
  return formatLagSeconds(seconds);
}

/** A timestamp, the one way every page writes one: "2026-11-28 13:33:08 UTC", or in the browser's zone when the
 * operator chose local time, "2026-11-28 14:33:08 GMT+1" (lib/timeZone.ts); `timeZone` overrides the choice. */
export function formatTime(iso: string | null | undefined, timeZone: string | undefined = formatZone()): string {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const found = Object.fromEntries(
    new Intl.DateTimeFormat("en-GB", {
      timeZone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
      second: "2-digit", hourCycle: "h23", timeZoneName: "shortOffset",
    })
      .formatToParts(date)
      .map((part) => [part.type, part.value]),
  );
  const zone = timeZone === "UTC" || found.timeZoneName === "GMT" ? "UTC" : found.timeZoneName;
  return `${found.year}-${found.month}-${found.day} ${found.hour}:${found.minute}:${found.second} ${zone}`;
}

/** "snake_case_name" → "Snake case name" (step and check names). */
export function humanize(name: string): string {
  const words = name.replace(/[_-]+/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A replication connection as every plan and preview names it: "'m1'", or "(default connection)" for MariaDB's
 * unnamed one ('', which quoted reads as nothing) — as the API's plans write it (core/naming.py). */
export function connectionName(name: string | null | undefined): string {
  return name ? `'${name}'` : "(default connection)";
}

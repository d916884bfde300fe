// Formatting of lag, durations and times for people: units always written, no colour needed to read them.

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

/** Both at once, as on an edge: "4.2 s · 12 txn". */
export function formatLag(lag: { seconds?: number | null; transactions?: number | null } | null | undefined): string {
  if (!lag) return "no lag reported";
  return `${formatLagSeconds(lag.seconds)} · ${formatLagTransactions(lag.transactions)}`;
}

export type LagLevel = "none" | "low" | "high";

/** Thresholds of the lag levels shown beside figures (text and colour). */
export const LAG_HIGH_SECONDS = 10;
export const LAG_HIGH_TRANSACTIONS = 1000;

export function lagLevel(lag: { seconds?: number | null; transactions?: number | null } | null | undefined): LagLevel {
  const seconds = lag?.seconds ?? 0;
  const transactions = lag?.transactions ?? 0;
  if (seconds >= LAG_HIGH_SECONDS || transactions >= LAG_HIGH_TRANSACTIONS) return "high";
  if (seconds > 0 || transactions > 0) return "low";
  return "none";
}

/** The largest lag over domains (seconds and transactions taken apart). */
export function worstLag(
  lags: Iterable<{ seconds: number; transactions: number }>,
): { seconds: number; transactions: number } | null {
  let found = false;
  let seconds = 0;
  let transactions = 0;
  for (const lag of lags) {
    found = true;
    seconds = Math.max(seconds, lag.seconds);
    transactions = Math.max(transactions, lag.transactions);
  }
  const worst = found ? { seconds, transactions } : null;
  return worst;
}

/** A duration in seconds: "12.3 ms", "1.250 s", "2 min 03 s". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds == null || Number.isNaN(seconds)) return "—";
  if (seconds < 1) return `${(seconds * 1000).toFixed(1)} ms`;
  if (seconds < 60) return `${seconds.toFixed(3)} s`;
  return formatLagSeconds(seconds);
}

/** A timestamp in the reader's locale with seconds. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { hour12: false });
}

/** "snake_case_name" → "Snake case name" (step and check names). */
export function humanize(name: string): string {
  const words = name.replace(/[_-]+/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

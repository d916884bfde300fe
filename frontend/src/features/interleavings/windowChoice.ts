// The interleavings' window as the URL keeps it (?window=30s, or ?window=gtid&from=1-1-100&to=1-1-200) and as the API
// is asked for it (last_s, or from/to positions, or the newest N per server), and the answered window in words
// (pure functions).
import type { Schemas } from "../../api/client";

export const WINDOWS = ["10s", "30s", "60s", "300s", "n50", "n200", "gtid"] as const;
export type WindowKey = (typeof WINDOWS)[number];
export const DEFAULT_WINDOW: WindowKey = "10s";

export const WINDOW_LABELS: Record<WindowKey, string> = {
  "10s": "last 10 s",
  "30s": "last 30 s",
  "60s": "last 60 s",
  "300s": "last 5 min",
  n50: "newest 50 per server",
  n200: "newest 200 per server",
  gtid: "GTID range…",
};

export interface WindowQuery {
  limit?: number;
  last_s?: number;
  from?: string;
  to?: string;
}

/** The API's query for a window choice; null for a GTID range with neither end given yet (nothing to ask). */
export function windowQuery(key: WindowKey, from: string | null, to: string | null): WindowQuery | null {
  if (key === "gtid") {
    if (!from && !to) return null;
    return { ...(from ? { from } : {}), ...(to ? { to } : {}) };
  }
  if (key.startsWith("n")) return { limit: Number(key.slice(1)) };
  return { last_s: Number(key.slice(0, -1)) };
}

const ranges = (window: Schemas["InterleavingWindow"]) =>
  Object.keys(window.newest)
    .map(Number)
    .sort((a, b) => a - b)
    .map((domain) => {
      const from = window.from_seq[domain];
      const newest = window.newest[domain];
      return `domain ${domain} ${from !== undefined ? `seq ${from}` : "from its first"}–${newest}`;
    })
    .join(", ");

/** What the answered window covers, in words. */
export function describeWindow(window: Schemas["InterleavingWindow"]): string {
  const covered = ranges(window);
  if (window.kind === "count") return `The newest ${window.limit} transactions of each server${covered ? ` (newest: ${Object.entries(window.newest).map(([d, s]) => `domain ${d} seq ${s}`).join(", ")})` : ""}.`;
  const what = window.kind === "time" ? `The last ${window.last_s} s of writes` : "The GTID range";
  return `${what}: ${covered || "no transaction in it"} (at most ${window.limit} per server).`;
}

/** A lane's "behind" figure: the transactions it lacks of the window's newest end, in all, and per domain. */
export function behindText(behind: Record<string, number> | undefined): { total: number; detail: string } | null {
  const entries = Object.entries(behind ?? {}).filter(([, n]) => n > 0);
  if (entries.length === 0) return null;
  const total = entries.reduce((sum, [, n]) => sum + n, 0);
  return { total, detail: entries.map(([domain, n]) => `domain ${domain}: ${n}`).join(", ") };
}

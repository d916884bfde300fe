// Time axes of the history charts: evenly spaced ticks over a range, labelled with the date when it spans days.

/** Evenly spaced time ticks over the whole range (Recharts would place them at data points only). */
export function timeTicks(sinceMs: number, untilMs: number, count = 6): number[] {
  if (untilMs <= sinceMs) return [sinceMs];
  const step = (untilMs - sinceMs) / (count - 1);
  return Array.from({ length: count }, (_, i) => Math.round(sinceMs + i * step));
}

/** A tick's label: the time of day over a few hours, the date and time over longer spans. */
export function timeLabel(t: number, spanMs: number): string {
  const date = new Date(t);
  if (spanMs > 2 * 86_400_000) return date.toLocaleDateString(undefined, { month: "short", day: "numeric" });
  if (spanMs > 6 * 3_600_000) return date.toLocaleTimeString(undefined, { hour12: false, hour: "2-digit", minute: "2-digit" });
  return date.toLocaleTimeString(undefined, { hour12: false });
}

/** A range around a set of instants, padded so a single point or the first and last are not on the edges. */
export function paddedDomain(times: readonly number[]): [number, number] {
  if (times.length === 0) return [0, 1];
  const first = Math.min(...times);
  const last = Math.max(...times);
  const pad = Math.max((last - first) * 0.05, 60_000);
  return [first - pad, last + pad];
}

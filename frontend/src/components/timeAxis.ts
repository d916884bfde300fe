// Time axes of the history charts: evenly spaced ticks over a range, labelled with the date when the range is
// longer than a few hours ("26 Nov 03:48"), and the time zone they are in (the operator's choice, lib/timeZone.ts:
// UTC, or the browser's own named with its offset: "Europe/Paris (GMT+1)"), so a 24 h axis never reads "03:48 … 03:48".
import { formatZone } from "../lib/timeZone";

/** Evenly spaced time ticks over the whole range (Recharts would place them at data points only). */
export function timeTicks(sinceMs: number, untilMs: number, count = 6): number[] {
  if (untilMs <= sinceMs) return [sinceMs];
  const step = (untilMs - sinceMs) / (count - 1);
  return Array.from({ length: count }, (_, i) => Math.round(sinceMs + i * step));
}

/** Ranges longer than this show the date beside the time on their ticks. */
const DATED_SPAN_MS = 6 * 3_600_000;
/** Ranges longer than this show the date alone. */
const DAYS_SPAN_MS = 7 * 86_400_000;

const pad = (n: number) => String(n).padStart(2, "0");

/** One formatter per time zone ("" the browser's own): making one costs far more than formatting with it, and every
 * tick and tooltip of every chart formats an instant. */
const formats = new Map<string, Intl.DateTimeFormat>();

function formatIn(timeZone: string | undefined): Intl.DateTimeFormat {
  const key = timeZone ?? "";
  let format = formats.get(key);
  if (format === undefined) {
    format = new Intl.DateTimeFormat("en-GB", {
      timeZone,
      day: "numeric",
      month: "short",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    });
    formats.set(key, format);
  }
  return format;
}

/** The parts of an instant in a time zone (the operator's choice when none is given). */
function parts(t: number, timeZone?: string): Record<"day" | "month" | "hour" | "minute" | "second", string> {
  const format = formatIn(timeZone ?? formatZone());
  const found = Object.fromEntries(format.formatToParts(new Date(t)).map((p) => [p.type, p.value]));
  return { day: found.day ?? "", month: found.month ?? "", hour: pad(Number(found.hour ?? 0)), minute: found.minute ?? "", second: found.second ?? "" };
}

/** A tick's label: the time of day over a few hours ("03:48:12"), "26 Nov 03:48" over longer spans, the date alone
 * over weeks. */
export function timeLabel(t: number, spanMs: number, timeZone?: string): string {
  const p = parts(t, timeZone);
  if (spanMs > DAYS_SPAN_MS) return `${p.day} ${p.month}`;
  if (spanMs > DATED_SPAN_MS) return `${p.day} ${p.month} ${p.hour}:${p.minute}`;
  return `${p.hour}:${p.minute}:${p.second}`;
}

/** An instant in full, for a tooltip: "26 Nov 03:48:12". */
export function instantLabel(t: number, timeZone?: string): string {
  const p = parts(t, timeZone);
  return `${p.day} ${p.month} ${p.hour}:${p.minute}:${p.second}`;
}

/** The time zone the axes are in (the operator's choice when none is given): its name, and its offset from UTC when that is not UTC ("Europe/Paris (GMT+1)"). */
export function zoneLabel(at: number = Date.now(), timeZone?: string): string {
  const zone = timeZone ?? formatZone() ?? Intl.DateTimeFormat().resolvedOptions().timeZone ?? "local time";
  if (zone === "UTC" || zone === "Etc/UTC") return "UTC";
  const offset = new Intl.DateTimeFormat("en-GB", { timeZone: zone, timeZoneName: "shortOffset" })
    .formatToParts(new Date(at))
    .find((p) => p.type === "timeZoneName")?.value;
  return offset && offset !== zone ? `${zone} (${offset})` : zone;
}

/** A range around a set of instants, padded so a single point or the first and last are not on the edges. */
export function paddedDomain(times: readonly number[]): [number, number] {
  if (times.length === 0) return [0, 1];
  const first = Math.min(...times);
  const last = Math.max(...times);
  const pad = Math.max((last - first) * 0.05, 60_000);
  return [first - pad, last + pad];
}

// Cron preview for drill schedules: a five-field expression in plain words (cronstrue) and its next run times
// in the schedule's IANA time zone (cron-parser), shown while an operator types. The backend (cronsim) is the
// authority; saved schedules show the times it computed.
import { CronExpressionParser } from "cron-parser";
import cronstrue from "cronstrue";

export type CronPreview = { ok: true; words: string; next: Date[] } | { ok: false; error: string };

const FIELDS = 5;

/** Describes `expression` and lists its next `count` run times after `from` in `timeZone`. */
export function previewCron(expression: string, timeZone: string, from: Date, count = 5): CronPreview {
  const trimmed = expression.trim().replace(/\s+/g, " ");
  const fields = trimmed === "" ? 0 : trimmed.split(" ").length;
  if (fields !== FIELDS) {
    return { ok: false, error: `a cron expression has ${FIELDS} fields (minute hour day month weekday); this has ${fields}` };
  }
  if (!isTimeZone(timeZone)) return { ok: false, error: `unknown time zone ${JSON.stringify(timeZone)}` };
  let words: string;
  try {
    words = cronstrue.toString(trimmed, { use24HourTimeFormat: true, throwExceptionOnParseError: true, verbose: false });
  } catch (e) {
    return { ok: false, error: String(e).replace(/^Error: /, "") };
  }
  try {
    const schedule = CronExpressionParser.parse(trimmed, { tz: timeZone, currentDate: from });
    const next = schedule.take(count).map((date) => date.toDate());
    return { ok: true, words: `${words} (${timeZone})`, next };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return name.trim() !== "";
  } catch {
    return false;
  }
}

/** The zones this browser knows, for the time-zone field's suggestions. */
export function timeZones(): string[] {
  const intl = Intl as typeof Intl & { supportedValuesOf?: (key: string) => string[] };
  return intl.supportedValuesOf ? ["UTC", ...intl.supportedValuesOf("timeZone").filter((z) => z !== "UTC")] : ["UTC"];
}

function parts(date: Date, timeZone: string): Record<string, string> {
  const format = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    weekday: "short",
    day: "2-digit",
    month: "short",
    year: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
  return Object.fromEntries(format.formatToParts(date).map((part) => [part.type, part.value]));
}

/** A run time in the schedule's zone and in UTC: "Mon 23 Nov 2026, 02:30 Europe/Berlin (01:30 UTC)". */
export function formatRunTime(date: Date, timeZone: string): string {
  const p = parts(date, timeZone);
  const local = `${p.weekday} ${p.day} ${p.month} ${p.year}, ${p.hour}:${p.minute}`;
  if (timeZone === "UTC") return `${local} UTC`;
  const utc = parts(date, "UTC");
  return `${local} ${timeZone} (${utc.hour}:${utc.minute} UTC)`;
}

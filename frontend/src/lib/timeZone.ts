// The one time zone every time on the dashboard is written in: the operator's choice of UTC or the browser's local
// zone, kept in localStorage (every tab, every visit), UTC until chosen. Tables, notes and chart axes all format
// through `formatTime` / `components/timeAxis.ts`, which read it here, and always write the zone beside the time.

export type ZoneChoice = "utc" | "local";

/** Where the choice is kept. */
export const ZONE_STORAGE_KEY = "ferry.timeZone";

function stored(): ZoneChoice {
  try {
    return globalThis.localStorage?.getItem(ZONE_STORAGE_KEY) === "local" ? "local" : "utc";
  } catch {
    return "utc";
  }
}

let current: ZoneChoice = stored();

/** The operator's choice now. */
export function zoneChoice(): ZoneChoice {
  return current;
}

/** Makes `choice` the zone of every time written from now on, and keeps it. */
export function setZoneChoice(choice: ZoneChoice): void {
  current = choice;
  try {
    globalThis.localStorage?.setItem(ZONE_STORAGE_KEY, choice);
  } catch {
    // A browser refusing storage keeps the choice for this page only.
  }
}

/** Reads the kept choice again (another tab changed it, or a test set it). */
export function reloadZoneChoice(): ZoneChoice {
  current = stored();
  return current;
}

/** The IANA zone to format in: "UTC", or undefined for the browser's own. */
export function formatZone(choice: ZoneChoice = current): string | undefined {
  return choice === "utc" ? "UTC" : undefined;
}

// A time window kept in the URL: ?range=15m (the last 15 minutes, sliding) or ?range=custom&from=…&to=… (fixed
// instants, ISO 8601; a custom range or a zoom). A custom range that does not parse reads as the fallback range.
import { useCallback, useMemo } from "react";
import { useSearchParams } from "react-router-dom";
import type { LagRange, TimeWindow } from "../api/queryKeys";

export type RangeChoice = LagRange | "custom";

export interface UrlTimeWindow {
  choice: RangeChoice;
  window: TimeWindow;
  setRange: (range: LagRange) => void;
  setCustom: (sinceMs: number, untilMs: number) => void;
}

export function parseWindow(params: URLSearchParams, ranges: readonly LagRange[], fallback: LagRange): TimeWindow {
  const range = params.get("range");
  if (range === "custom") {
    const sinceMs = Date.parse(params.get("from") ?? "");
    const untilMs = Date.parse(params.get("to") ?? "");
    if (Number.isFinite(sinceMs) && Number.isFinite(untilMs) && sinceMs < untilMs) return { sinceMs, untilMs };
  }
  return { range: ranges.includes(range as LagRange) ? (range as LagRange) : fallback };
}

export function useTimeWindow(ranges: readonly LagRange[], fallback: LagRange): UrlTimeWindow {
  const [params, setParams] = useSearchParams();
  const range = params.get("range");
  const from = params.get("from");
  const to = params.get("to");
  const window = useMemo(
    () => parseWindow(new URLSearchParams({ range: range ?? "", from: from ?? "", to: to ?? "" }), ranges, fallback),
    [range, from, to, ranges, fallback],
  );
  const setRange = useCallback(
    (next: LagRange) =>
      setParams(
        (current) => {
          const updated = new URLSearchParams(current);
          updated.delete("from");
          updated.delete("to");
          if (next === fallback) updated.delete("range");
          else updated.set("range", next);
          return updated;
        },
        { replace: true },
      ),
    [fallback, setParams],
  );
  const setCustom = useCallback(
    (sinceMs: number, untilMs: number) =>
      setParams((current) => {
        const updated = new URLSearchParams(current);
        updated.set("range", "custom");
        updated.set("from", new Date(Math.round(sinceMs)).toISOString());
        updated.set("to", new Date(Math.round(untilMs)).toISOString());
        return updated;
      }),
    [setParams],
  );
  return { choice: "range" in window ? window.range : "custom", window, setRange, setCustom };
}

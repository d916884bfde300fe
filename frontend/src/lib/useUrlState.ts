// Page state kept in the URL's query string (domain filter, lag range, live/paused), so a link or a reload shows
// the same view. Setting a value replaces the history entry rather than adding one per click.
import { useCallback, useMemo } from "react";
import { useSearchParams } from "react-router-dom";

/** A string parameter limited to `choices`; anything else reads as `fallback`. */
export function useUrlChoice<T extends string>(name: string, choices: readonly T[], fallback: T): [T, (value: T) => void] {
  const [params, setParams] = useSearchParams();
  const raw = params.get(name);
  const value = choices.includes(raw as T) ? (raw as T) : fallback;
  const setValue = useCallback(
    (next: T) =>
      setParams(
        (current) => {
          const updated = new URLSearchParams(current);
          if (next === fallback) updated.delete(name);
          else updated.set(name, next);
          return updated;
        },
        { replace: true },
      ),
    [name, fallback, setParams],
  );
  return [value, setValue];
}

/** A set of non-negative integers as "1,3"; empty means "all". */
export function parseIntList(raw: string | null): number[] {
  if (!raw) return [];
  const values = raw
    .split(",")
    .map((part) => part.trim())
    .filter((part) => /^\d+$/.test(part))
    .map(Number);
  return [...new Set(values)].sort((a, b) => a - b);
}

export function useUrlIntList(name: string): [number[], (values: number[]) => void] {
  const [params, setParams] = useSearchParams();
  const raw = params.get(name);
  // The same array while the parameter is unchanged: views memoise on it.
  const value = useMemo(() => parseIntList(raw), [raw]);
  const setValue = useCallback(
    (next: number[]) =>
      setParams(
        (current) => {
          const updated = new URLSearchParams(current);
          const list = parseIntList(next.join(","));
          if (list.length === 0) updated.delete(name);
          else updated.set(name, list.join(","));
          return updated;
        },
        { replace: true },
      ),
    [name, setParams],
  );
  return [value, setValue];
}

/** A free string parameter (validated by the caller); empty or null removes it. */
export function useUrlString(name: string): [string | null, (value: string | null) => void] {
  const [params, setParams] = useSearchParams();
  const value = params.get(name);
  const setValue = useCallback(
    (next: string | null) =>
      setParams(
        (current) => {
          const updated = new URLSearchParams(current);
          if (next) updated.set(name, next);
          else updated.delete(name);
          return updated;
        },
        { replace: true },
      ),
    [name, setParams],
  );
  return [value, setValue];
}

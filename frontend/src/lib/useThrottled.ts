// A value that follows `value` at most once every `everyMs`, the newest taken at the end of each interval (so the last
// change is never lost, only held back): a view whose input changes several times a second — the live topology moves
// with every position event — re-draws at the pace it can be read instead of with each event.
import { useEffect, useRef, useState } from "react";

export function useThrottled<T>(value: T, everyMs: number): T {
  const [shown, setShown] = useState(value);
  const lastMs = useRef(0);
  useEffect(() => {
    const take = () => {
      lastMs.current = Date.now();
      setShown(value);
    };
    const waitMs = lastMs.current + everyMs - Date.now();
    if (waitMs <= 0) {
      take();
      return;
    }
    const timer = setTimeout(take, waitMs);
    return () => clearTimeout(timer);
  }, [value, everyMs]);
  return shown;
}

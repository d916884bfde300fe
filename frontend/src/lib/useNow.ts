// The current time, re-read every `everyMs` (a countdown's clock): components that show "ends in …" re-render as it
// runs and see a deadline pass without any request.
import { useEffect, useState } from "react";

export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

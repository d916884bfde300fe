// Whether the page is fed by server-sent events or must poll: queries ask `usePollInterval()` for their
// refetch interval, which is off while the event stream is open and on (POLL_MS) otherwise.
import { createContext, useContext } from "react";

export type LiveMode = "connecting" | "streaming" | "polling";

/** Refetch interval when the event stream is not open. */
export const POLL_MS = 2000;

export const LiveContext = createContext<LiveMode>("polling");

export function useLiveMode(): LiveMode {
  return useContext(LiveContext);
}

/** `false` while events stream, else the polling interval. */
export function usePollInterval(): number | false {
  return useLiveMode() === "streaming" ? false : POLL_MS;
}

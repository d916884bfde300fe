// Follows a cluster's server-sent events (GET /api/v1/clusters/{id}/events) and refreshes the queries each event
// makes stale. A `position` event moves the topology's servers at once (live/livePositions.ts) and refreshes the
// views it concerns — the positions matrix and the servers, each a whole snapshot with its verdicts — at most once a
// second (events come several times a second while servers commit). A fetch under way is never cancelled by a refresh:
// the query is refreshed again once it is done (live/refresh.ts). While the
// stream is down the mode is "polling" (queries poll, see LiveContext) and the stream is retried with backoff.
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { authHeaders, type Schemas } from "../api/client";
import { queryKeys } from "../api/queryKeys";
import { parseEvent, staleQueries } from "./invalidation";
import { forgetPositions, recordPosition, withLiveTopology } from "./livePositions";
import { markStale, refreshIdle, type StaleQueries } from "./refresh";
import type { LiveMode } from "./LiveContext";
import { readEventStream } from "./sse";

/** Events within this window refresh a query once. */
const COALESCE_MS = 250;
/** Position events within this window refresh a query once (the matrix itself moves with each). */
const POSITION_COALESCE_MS = 1000;
const RETRY_MS_MIN = 1000;
const RETRY_MS_MAX = 15_000;

export function useClusterEvents(clusterId: number): LiveMode {
  const queryClient = useQueryClient();
  const [mode, setMode] = useState<LiveMode>("connecting");

  useEffect(() => {
    const controller = new AbortController();
    const pending = new Map<string, StaleQueries>();
    const pendingSlow = new Map<string, StaleQueries>();
    let flushTimer: ReturnType<typeof setTimeout> | null = null;
    let slowTimer: ReturnType<typeof setTimeout> | null = null;
    let retryTimer: ReturnType<typeof setTimeout> | null = null;
    let retryMs = RETRY_MS_MIN;

    const mark = (keys: Map<string, StaleQueries>, suffix: (string | number)[]) =>
      markStale(keys, ["clusters", clusterId, ...suffix], suffix.length === 0);
    // What a fetch under way kept is tried again at the next flush.
    const flush = () => {
      flushTimer = refreshIdle(queryClient, pending) ? setTimeout(flush, COALESCE_MS) : null;
    };
    const flushSlow = () => {
      slowTimer = refreshIdle(queryClient, pendingSlow) ? setTimeout(flushSlow, POSITION_COALESCE_MS) : null;
    };

    const connect = () => {
      setMode((current) => (current === "streaming" ? "polling" : current));
      readEventStream(
        `${window.location.origin}/api/v1/clusters/${clusterId}/events`,
        authHeaders(),
        {
          onOpen: () => {
            retryMs = RETRY_MS_MIN;
            setMode("streaming");
            // Whatever changed while the stream was down.
            markStale(pending, ["clusters", clusterId], false);
            if (flushTimer) clearTimeout(flushTimer);
            flush();
          },
          onEvent: (event) => {
            const data = parseEvent(event.event, event.data);
            if (data === null) return;
            if (data.event === "position") {
              const now = Date.now();
              recordPosition(clusterId, data, now);
              type Topology = Schemas["TopologyGraph"] | undefined;
              queryClient.setQueryData(queryKeys.topology(clusterId), (topology: Topology) =>
                topology === undefined ? topology : withLiveTopology(clusterId, topology, now),
              );
              for (const suffix of staleQueries(data)) mark(pendingSlow, suffix);
              if (slowTimer === null) slowTimer = setTimeout(flushSlow, POSITION_COALESCE_MS);
              return;
            }
            for (const suffix of staleQueries(data)) mark(pending, suffix);
            if (pending.size > 0 && flushTimer === null) flushTimer = setTimeout(flush, COALESCE_MS);
          },
        },
        controller.signal,
      )
        .catch(() => undefined)
        .finally(() => {
          if (controller.signal.aborted) return;
          setMode("polling");
          retryTimer = setTimeout(connect, retryMs);
          retryMs = Math.min(retryMs * 2, RETRY_MS_MAX);
        });
    };
    connect();

    return () => {
      controller.abort();
      forgetPositions(clusterId);
      if (flushTimer) clearTimeout(flushTimer);
      if (slowTimer) clearTimeout(slowTimer);
      if (retryTimer) clearTimeout(retryTimer);
    };
  }, [clusterId, queryClient]);

  return mode;
}

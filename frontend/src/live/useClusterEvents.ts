// Follows a cluster's server-sent events (GET /api/v1/clusters/{id}/events) and refreshes the queries each event
// makes stale. A `position` event moves the topology's servers at once (live/livePositions.ts) and refreshes the
// views it concerns — the positions matrix and the servers, each a whole snapshot with its verdicts — at most once a
// second (events come several times a second while servers commit). While the
// stream is down the mode is "polling" (queries poll, see LiveContext) and the stream is retried with backoff.
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { authHeaders, type Schemas } from "../api/client";
import { queryKeys } from "../api/queryKeys";
import { parseEvent, staleQueries } from "./invalidation";
import { forgetPositions, recordPosition, withLiveTopology } from "./livePositions";
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
    const pending = new Map<string, (string | number)[]>();
    const pendingSlow = new Map<string, (string | number)[]>();
    let flushTimer: ReturnType<typeof setTimeout> | null = null;
    let slowTimer: ReturnType<typeof setTimeout> | null = null;
    let retryTimer: ReturnType<typeof setTimeout> | null = null;
    let retryMs = RETRY_MS_MIN;

    const refresh = (keys: Map<string, (string | number)[]>) => {
      for (const suffix of keys.values()) {
        void queryClient.invalidateQueries({ queryKey: ["clusters", clusterId, ...suffix], exact: suffix.length === 0 });
      }
      keys.clear();
    };
    const flush = () => {
      flushTimer = null;
      refresh(pending);
    };
    const flushSlow = () => {
      slowTimer = null;
      refresh(pendingSlow);
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
            void queryClient.invalidateQueries({ queryKey: ["clusters", clusterId] });
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
              for (const suffix of staleQueries(data)) pendingSlow.set(JSON.stringify(suffix), suffix);
              if (slowTimer === null) slowTimer = setTimeout(flushSlow, POSITION_COALESCE_MS);
              return;
            }
            for (const suffix of staleQueries(data)) pending.set(JSON.stringify(suffix), suffix);
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

// Follows a cluster's server-sent events (GET /api/v1/clusters/{id}/events) and refreshes the queries each event
// makes stale. While the stream is down the mode is "polling" (queries poll, see LiveContext) and the stream is
// retried with backoff.
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { authHeaders } from "../api/client";
import { parseEvent, staleQueries } from "./invalidation";
import type { LiveMode } from "./LiveContext";
import { readEventStream } from "./sse";

/** Events within this window refresh a query once. */
const COALESCE_MS = 250;
const RETRY_MS_MIN = 1000;
const RETRY_MS_MAX = 15_000;

export function useClusterEvents(clusterId: number): LiveMode {
  const queryClient = useQueryClient();
  const [mode, setMode] = useState<LiveMode>("connecting");

  useEffect(() => {
    const controller = new AbortController();
    const pending = new Map<string, (string | number)[]>();
    let flushTimer: ReturnType<typeof setTimeout> | null = null;
    let retryTimer: ReturnType<typeof setTimeout> | null = null;
    let retryMs = RETRY_MS_MIN;

    const flush = () => {
      flushTimer = null;
      for (const suffix of pending.values()) {
        void queryClient.invalidateQueries({ queryKey: ["clusters", clusterId, ...suffix], exact: suffix.length === 0 });
      }
      pending.clear();
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
      if (flushTimer) clearTimeout(flushTimer);
      if (retryTimer) clearTimeout(retryTimer);
    };
  }, [clusterId, queryClient]);

  return mode;
}

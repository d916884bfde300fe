// One read hook per GET endpoint, over the typed client; each query key holds the endpoint's parameters, and
// the refetch interval follows the live mode (off while server-sent events stream).
import { useQuery } from "@tanstack/react-query";
import { usePollInterval } from "../live/LiveContext";
import { withLiveTopology } from "../live/livePositions";
import { api, unwrap } from "./client";
import { withTimeout } from "./timeout";
import { LAG_RANGE_MS, queryKeys, type TimeWindow } from "./queryKeys";

/** Every cluster with its summary (health, masters, replicas, worst lag) and last drill, in one request. */
export function useClustersOverview() {
  const refetchInterval = usePollInterval();
  return useQuery({
    queryKey: queryKeys.clustersOverview(),
    queryFn: () => unwrap(api.GET("/api/v1/clusters/overview")),
    refetchInterval: refetchInterval === false ? 10_000 : refetchInterval,
  });
}

export function useCluster(clusterId: number) {
  return useQuery({
    queryKey: queryKeys.cluster(clusterId),
    queryFn: () => unwrap(api.GET("/api/v1/clusters/{cluster_id}", { params: { path: { cluster_id: clusterId } } })),
  });
}

/** The servers as stored: each one's positions, read-only flag and health from its last poll together (a server's
 * page shows gtid_binlog_pos beside gtid_current_pos, so no position the stream said is laid over one of them). */
export function useServers(clusterId: number) {
  const refetchInterval = usePollInterval();
  return useQuery({
    queryKey: queryKeys.servers(clusterId),
    queryFn: () =>
      unwrap(api.GET("/api/v1/clusters/{cluster_id}/servers", { params: { path: { cluster_id: clusterId } } })),
    refetchInterval,
  });
}

/** The topology as stored, its servers' positions moved as the event stream said since (live/livePositions.ts). */
export function useTopology(clusterId: number) {
  const refetchInterval = usePollInterval();
  return useQuery({
    queryKey: queryKeys.topology(clusterId),
    queryFn: async () =>
      withLiveTopology(
        clusterId,
        await unwrap(
          api.GET("/api/v1/clusters/{cluster_id}/topology", { params: { path: { cluster_id: clusterId } } }),
        ),
        Date.now(),
      ),
    refetchInterval,
  });
}

/** The positions matrix as the API computed it: each row one server's last poll (read at its `last_seen_at`) with
 * the verdicts computed from those same positions — never live cells laid over an older snapshot's verdicts. A
 * `position` event refetches it (at most once a second, live/useClusterEvents.ts). */
export function usePositions(clusterId: number) {
  const refetchInterval = usePollInterval();
  return useQuery({
    queryKey: queryKeys.positions(clusterId),
    queryFn: () =>
      unwrap(api.GET("/api/v1/clusters/{cluster_id}/positions", { params: { path: { cluster_id: clusterId } } })),
    refetchInterval,
  });
}

/** The proxies in front of the cluster, as their admin sockets say it now (every 5 s: not an event's business). */
export function useProxies(clusterId: number) {
  return useQuery({
    queryKey: queryKeys.proxies(clusterId),
    queryFn: () =>
      unwrap(api.GET("/api/v1/clusters/{cluster_id}/proxies", { params: { path: { cluster_id: clusterId } } })),
    refetchInterval: 5_000,
  });
}

/** Lag samples over a window: the last `range` (`live` refetches every 2 s so it slides) or fixed instants. */
export function useLagHistory(clusterId: number, window: TimeWindow, domain: number | null, live: boolean) {
  const fixed = !("range" in window);
  return useQuery({
    queryKey: queryKeys.lagHistory(clusterId, { window, domain }),
    queryFn: () => {
      const until = "range" in window ? new Date() : new Date(window.untilMs);
      const since = "range" in window ? new Date(until.getTime() - LAG_RANGE_MS[window.range]) : new Date(window.sinceMs);
      return unwrap(
        api.GET("/api/v1/clusters/{cluster_id}/lag/history", {
          params: {
            path: { cluster_id: clusterId },
            query: { since: since.toISOString(), until: until.toISOString(), domain, limit: 10_000 },
          },
        }),
      );
    },
    refetchInterval: live && !fixed ? 2000 : false,
    placeholderData: (previous) => previous,
  });
}

/** How long the dashboard waits for an interleavings answer (the backend bounds each server's part by
 * heavy_read_timeout_s, 10 s by default, and answers with that server's error) before it says so. */
export const INTERLEAVINGS_TIMEOUT_MS = 15_000;

/** The window an interleavings read covers: the newest `limit` of each server, the last `last_s` seconds, or a GTID
 * range (`from`/`to` positions). */
export interface InterleavingsWindow {
  limit?: number;
  last_s?: number;
  from?: string;
  to?: string;
}

/** Every server's binlog within `window` (null: nothing asked yet); `live` refetches every 2 s. Bounded in time: no
 * answer within `timeoutMs` is an error saying so (not a spinner forever), and it is not retried on its own — the
 * live refresh, or the view's Retry, asks again. */
export function useInterleavings(
  clusterId: number,
  window: InterleavingsWindow | null,
  domain: number | null,
  live: boolean,
  timeoutMs = INTERLEAVINGS_TIMEOUT_MS,
) {
  const limit = window?.limit ?? 0;
  return useQuery({
    queryKey: [...queryKeys.interleavings(clusterId, { limit, domain }), { last_s: window?.last_s, from: window?.from, to: window?.to }],
    queryFn: ({ signal }) =>
      withTimeout(signal, timeoutMs, (bounded) =>
        unwrap(
          api.GET("/api/v1/clusters/{cluster_id}/interleavings", {
            params: { path: { cluster_id: clusterId }, query: { ...window, domain } },
            signal: bounded,
          }),
        ),
      ),
    enabled: window !== null,
    refetchInterval: live ? 2000 : false,
    placeholderData: (previous) => previous,
    retry: false,
  });
}

export function useOperations(clusterId: number, limit = 50) {
  const refetchInterval = usePollInterval();
  return useQuery({
    queryKey: queryKeys.operations(clusterId, { limit }),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/clusters/{cluster_id}/operations", {
          params: { path: { cluster_id: clusterId }, query: { limit } },
        }),
      ),
    refetchInterval,
  });
}

/** One operation; polled every second until it has finished (events also update it). */
export function useOperation(clusterId: number, operationId: number | null) {
  return useQuery({
    queryKey: queryKeys.operation(clusterId, operationId ?? 0),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/clusters/{cluster_id}/operations/{operation_id}", {
          params: { path: { cluster_id: clusterId, operation_id: operationId ?? 0 } },
        }),
      ),
    enabled: operationId != null,
    refetchInterval: (query) => {
      const state = query.state.data?.state;
      return state === "pending" || state === "running" || state === undefined ? 1000 : false;
    },
  });
}

export function useAudit(filter: AuditFilter) {
  const refetchInterval = usePollInterval();
  const { clusterId = null, serverId = null, actor = null, action = null, outcome = null, since = null, until = null } = filter;
  const limit = filter.limit ?? 100;
  return useQuery({
    queryKey: queryKeys.audit({ clusterId, serverId, actor, action, outcome, since, until, limit }),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/audit", {
          params: {
            query: {
              cluster_id: clusterId, registered_server_id: serverId, actor, action, outcome, since, until, limit,
            },
          },
        }),
      ),
    refetchInterval: refetchInterval === false ? 5000 : refetchInterval,
  });
}

/** What GET /api/v1/audit is asked for (each given narrows it; times as ISO 8601 with their zone). */
export interface AuditFilter {
  clusterId?: number | null;
  serverId?: number | null;
  actor?: string | null;
  action?: string | null;
  outcome?: "succeeded" | "failed" | "denied" | null;
  since?: string | null;
  until?: string | null;
  limit?: number;
}

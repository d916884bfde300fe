// Read hooks for the history plots: the switchovers and failovers that really ran (no dry runs), and the
// collector's recent cycles and the servers behind their failed polls. One hook per endpoint; each query key holds the parameters sent.
import { useQuery } from "@tanstack/react-query";
import { usePollInterval } from "../live/LiveContext";
import { api, unwrap, type Schemas } from "./client";
import { queryKeys } from "./queryKeys";
import type { paths } from "./schema";

type OperationsQuery = NonNullable<paths["/api/v1/clusters/{cluster_id}/operations"]["get"]["parameters"]["query"]>;
export type OperationType = NonNullable<OperationsQuery["type"]>[number];
export type CollectorCycles = Schemas["CollectorCycles"];

/** Write-changing operations that ran for real, newest first (`?type=…&dry_run=false`). */
export function useOperationHistory(clusterId: number, types: readonly OperationType[], limit = 200) {
  const refetchInterval = usePollInterval();
  return useQuery({
    queryKey: queryKeys.operationHistory(clusterId, { types, limit }),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/clusters/{cluster_id}/operations", {
          params: { path: { cluster_id: clusterId }, query: { type: [...types], dry_run: false, limit } },
        }),
      ),
    refetchInterval: refetchInterval === false ? 10_000 : refetchInterval,
  });
}

/** The collector's newest cycles on the instance answering, refreshed every 2 s. */
export function useCollectorCycles(limit = 900) {
  return useQuery({
    queryKey: queryKeys.collectorCycles({ limit }),
    queryFn: () => unwrap(api.GET("/api/v1/collector/cycles", { params: { query: { limit } } })),
    refetchInterval: 2000,
    placeholderData: (previous) => previous,
  });
}

/** The servers behind the failed polls of the same newest cycles, each with its last error; refreshed every 2 s. */
export function useCollectorFailedPolls(limit = 900) {
  return useQuery({
    queryKey: queryKeys.collectorFailedPolls({ limit }),
    queryFn: () => unwrap(api.GET("/api/v1/collector/failed-polls", { params: { query: { limit } } })),
    refetchInterval: 2000,
    placeholderData: (previous) => previous,
  });
}

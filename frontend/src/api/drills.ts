// One hook per drill endpoint: schedules (list, create, update, delete), runs (list, one, run now). Writes
// refresh the cluster's drill queries; a run in progress is polled until it has passed or failed.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { usePollInterval } from "../live/LiveContext";
import { api, unwrap, type Schemas } from "./client";
import { queryKeys } from "./queryKeys";

export type DrillSchedule = Schemas["DrillScheduleRead"];
export type DrillRun = Schemas["DrillRunRead"];

export function useDrillSchedules(clusterId: number) {
  return useQuery({
    queryKey: queryKeys.drillSchedules(clusterId),
    queryFn: () =>
      unwrap(api.GET("/api/v1/clusters/{cluster_id}/drills/schedules", { params: { path: { cluster_id: clusterId } } })),
  });
}

export function useDrillRuns(clusterId: number, limit = 50) {
  const refetchInterval = usePollInterval();
  return useQuery({
    queryKey: queryKeys.drillRuns(clusterId, { limit }),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/clusters/{cluster_id}/drills/runs", {
          params: { path: { cluster_id: clusterId }, query: { limit } },
        }),
      ),
    refetchInterval: (query) =>
      query.state.data?.some((run) => run.state === "pending" || run.state === "running") ? 1000 : refetchInterval,
  });
}

export function useDrillRun(clusterId: number, runId: number | null) {
  return useQuery({
    queryKey: queryKeys.drillRun(clusterId, runId ?? 0),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/clusters/{cluster_id}/drills/runs/{run_id}", {
          params: { path: { cluster_id: clusterId, run_id: runId ?? 0 } },
        }),
      ),
    enabled: runId != null,
    refetchInterval: (query) => {
      const state = query.state.data?.state;
      return state === "passed" || state === "failed" ? false : 1000;
    },
  });
}

function useDrillWrite<Variables, Result>(clusterId: number, write: (variables: Variables) => Promise<Result>) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: write,
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["clusters", clusterId, "drills"] }),
  });
}

export function useCreateDrillSchedule(clusterId: number) {
  return useDrillWrite(clusterId, (body: Schemas["DrillScheduleCreate"]) =>
    unwrap(api.POST("/api/v1/clusters/{cluster_id}/drills/schedules", { params: { path: { cluster_id: clusterId } }, body })),
  );
}

export function useUpdateDrillSchedule(clusterId: number) {
  return useDrillWrite(clusterId, ({ scheduleId, body }: { scheduleId: number; body: Schemas["DrillScheduleUpdate"] }) =>
    unwrap(
      api.PATCH("/api/v1/clusters/{cluster_id}/drills/schedules/{schedule_id}", {
        params: { path: { cluster_id: clusterId, schedule_id: scheduleId } },
        body,
      }),
    ),
  );
}

export function useDeleteDrillSchedule(clusterId: number) {
  return useDrillWrite(clusterId, (scheduleId: number) =>
    unwrap(
      api.DELETE("/api/v1/clusters/{cluster_id}/drills/schedules/{schedule_id}", {
        params: { path: { cluster_id: clusterId, schedule_id: scheduleId } },
      }),
    ),
  );
}

export function useRunDrill(clusterId: number) {
  return useDrillWrite(clusterId, (body: Schemas["DrillRunCreate"]) =>
    unwrap(api.POST("/api/v1/clusters/{cluster_id}/drills/runs", { params: { path: { cluster_id: clusterId } }, body })),
  );
}

/** POST …/drills/dry-run: what a drill with this plan would do — a switchover dry run (an operation to follow). */
export function useDrillDryRun(clusterId: number) {
  return useMutation({
    mutationFn: (body: Schemas["DrillRunCreate"]) =>
      unwrap(api.POST("/api/v1/clusters/{cluster_id}/drills/dry-run", { params: { path: { cluster_id: clusterId } }, body })),
  });
}

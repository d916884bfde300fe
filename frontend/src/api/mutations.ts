// One mutation hook per state-changing endpoint the dashboard uses. Operations answer 202 with the (pending)
// operation; the hook refreshes the history (the operation itself is then read, and followed, by useOperation). Every operation POST carries an
// Idempotency-Key so a retried click gives back the same operation.
import { useMutation, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "./client";
import { queryKeys } from "./queryKeys";

export type Operation = Schemas["OperationRead"];

export interface OperationVariables<Body> {
  body: Body;
  idempotencyKey: string;
}

/** A fresh Idempotency-Key for one intended action. */
export function newIdempotencyKey(): string {
  return globalThis.crypto?.randomUUID?.() ?? `k-${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

function afterStart(queryClient: QueryClient, clusterId: number) {
  void queryClient.invalidateQueries({ queryKey: ["clusters", clusterId, "operations"] });
}

function useOperationMutation<Body>(
  clusterId: number,
  start: (clusterId: number, variables: OperationVariables<Body>) => Promise<Operation>,
) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (variables: OperationVariables<Body>) => start(clusterId, variables),
    onSuccess: () => afterStart(queryClient, clusterId),
  });
}

const path = (clusterId: number) => ({ cluster_id: clusterId });
const header = (key: string) => ({ "idempotency-key": key });

export type SwitchoverBody = Schemas["SwitchoverRequest"];
export function useSwitchover(clusterId: number) {
  return useOperationMutation<SwitchoverBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/switchover", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

export type FailoverBody = Schemas["FailoverRequest"];
export function useFailover(clusterId: number) {
  return useOperationMutation<FailoverBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/failover", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

export type RepointBody = Schemas["RepointRequest"];
export function useRepoint(clusterId: number) {
  return useOperationMutation<RepointBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/repoint", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

export type ReadOnlyBody = Schemas["ReadOnlyRequest"];
export function useReadOnly(clusterId: number) {
  return useOperationMutation<ReadOnlyBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/read-only", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

export type StartReplicationBody = Schemas["StartReplicationRequest"];
export function useStartReplication(clusterId: number) {
  return useOperationMutation<StartReplicationBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/start-replication", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

export type StopReplicationBody = Schemas["StopReplicationRequest"];
export function useStopReplication(clusterId: number) {
  return useOperationMutation<StopReplicationBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/stop-replication", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

export type BringLevelBody = Schemas["BringLevelRequest"];
export function useBringLevel(clusterId: number) {
  return useOperationMutation<BringLevelBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/bring-level", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

export type SkipTransactionsBody = Schemas["SkipTransactionsRequest"];
export function useSkipTransactions(clusterId: number) {
  return useOperationMutation<SkipTransactionsBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/skip-transactions", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

export type RejoinBody = Schemas["RejoinRequest"];
export function useRejoin(clusterId: number) {
  return useOperationMutation<RejoinBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/rejoin", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

export type ConsistencyCheckBody = Schemas["ConsistencyCheckRequest"];
export function useConsistencyCheck(clusterId: number) {
  return useOperationMutation<ConsistencyCheckBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/consistency-check", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

export type RebuildBody = Schemas["RebuildRequest"];
export function useRebuild(clusterId: number) {
  return useOperationMutation<RebuildBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/rebuild", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

/** POST …/operations/{id}/cancel: a running operation stops through its own compensation (a rebuild leaves its server
 * stopped and marked). */
export function useCancelOperation(clusterId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (operationId: number) =>
      unwrap(
        api.POST("/api/v1/clusters/{cluster_id}/operations/{operation_id}/cancel", {
          params: { path: { cluster_id: clusterId, operation_id: operationId } },
        }),
      ),
    onSuccess: (_data, operationId) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.operation(clusterId, operationId) });
      afterStart(queryClient, clusterId);
    },
  });
}

/** POST …/servers/{id}/unfence: a former master a failover fenced may be made writable again. */
export function useUnfence(clusterId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (serverId: number) =>
      unwrap(
        api.POST("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}/unfence", {
          params: { path: { cluster_id: clusterId, registered_server_id: serverId } },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.cluster(clusterId) }),
  });
}

/** POST …/failover/acknowledge: automatic failover may run again after its cool-down. */
export function useAcknowledgeFailover(clusterId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/api/v1/clusters/{cluster_id}/failover/acknowledge", { params: { path: { cluster_id: clusterId } } }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.cluster(clusterId) }),
  });
}

/** PUT …/servers/{id}/maintenance: not an operation, applied at once. Starting it takes a reason and a duration
 * (the owner is the caller's token); `{ maintenance: false }` ends it. */
export function useSetMaintenance(clusterId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: ({ serverId, body }: { serverId: number; body: Schemas["MaintenanceUpdate"] }) =>
      unwrap(
        api.PUT("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}/maintenance", {
          params: { path: { cluster_id: clusterId, registered_server_id: serverId } },
          body,
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.cluster(clusterId) }),
  });
}

export type ParallelApplyBody = Schemas["ParallelApplyRequest"];
/** POST …/operations/parallel-apply: a replica connection's parallel apply changed online. */
export function useParallelApply(clusterId: number) {
  return useOperationMutation<ParallelApplyBody>(clusterId, (id, { body, idempotencyKey }) =>
    unwrap(
      api.POST("/api/v1/clusters/{cluster_id}/operations/parallel-apply", {
        params: { path: path(id), header: header(idempotencyKey) },
        body,
      }),
    ),
  );
}

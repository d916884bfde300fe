// Changing or deleting a cluster (operators): PATCH /clusters/{id} with only what changed, DELETE /clusters/{id};
// both refresh the overview, an edit also the cluster (from the answer).
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "./client";
import { queryKeys } from "./queryKeys";

export type ClusterUpdate = Schemas["ClusterUpdate"];

export function useUpdateCluster(clusterId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: ClusterUpdate) =>
      unwrap(api.PATCH("/api/v1/clusters/{cluster_id}", { params: { path: { cluster_id: clusterId } }, body })),
    onSuccess: (cluster) => {
      queryClient.setQueryData(queryKeys.cluster(clusterId), cluster);
      void queryClient.invalidateQueries({ queryKey: queryKeys.clustersOverview() });
    },
  });
}

export function useDeleteCluster(clusterId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.DELETE("/api/v1/clusters/{cluster_id}", { params: { path: { cluster_id: clusterId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.clustersOverview() }),
  });
}

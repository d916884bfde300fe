// Registering a cluster from one seed server: POST /clusters with the cluster's logins (write-only: the answer has
// only `*_set` flags), then POST /clusters/{id}/discovery from the seed. When discovery fails the cluster stays
// registered, and the error says so (discovery can be run again from the cluster's page or the API).
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, ApiError, unwrap, type Schemas } from "./client";
import { queryKeys } from "./queryKeys";

export type ServerKind = Schemas["ServerKind"];

export interface RegisterClusterInput {
  name: string;
  kind: ServerKind;
  host: string;
  /** MariaDB: the SQL port (also what the control plane speaks to); ferryd: the protocol port. */
  port: number;
  /** ferryd only: the admin API's port. */
  adminPort: number | null;
  dbUser: string;
  dbPassword: string;
  replicationUser: string;
  replicationPassword: string;
  tlsCa: string;
}

export interface Registered {
  cluster: Schemas["ClusterRead"];
  discovery: Schemas["DiscoveryResult"];
}

/** The POST /clusters body: empty optional logins are left out (never sent as empty strings). */
export function clusterBody(input: RegisterClusterInput): Schemas["ClusterCreate"] {
  const body: Schemas["ClusterCreate"] = {
    name: input.name.trim(), description: "", auto_failover: false, auto_rejoin: false,
    enforce_read_only_replicas: true, catch_up_parallel_workers: 0,
  };
  if (input.kind === "mariadb") {
    body.admin_port_offset = 0;
    body.db_user = input.dbUser;
    body.db_password = input.dbPassword;
    if (input.replicationUser) {
      body.replication_user = input.replicationUser;
      body.replication_password = input.replicationPassword;
    }
    if (input.tlsCa.trim()) body.tls_ca = input.tlsCa;
  }
  return body;
}

export function discoveryBody(input: RegisterClusterInput): Schemas["DiscoveryRequest"] {
  return {
    kind: input.kind,
    host: input.host.trim(),
    protocol_port: input.port,
    admin_port: input.kind === "mariadb" ? input.port : (input.adminPort ?? input.port),
  };
}

export function useRegisterCluster() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (input: RegisterClusterInput): Promise<Registered> => {
      const cluster = await unwrap(api.POST("/api/v1/clusters", { body: clusterBody(input) }));
      try {
        const discovery = await unwrap(
          api.POST("/api/v1/clusters/{cluster_id}/discovery", {
            params: { path: { cluster_id: cluster.id } },
            body: discoveryBody(input),
          }),
        );
        return { cluster, discovery };
      } catch (e) {
        const reason = e instanceof ApiError ? e.message : String(e);
        throw new ApiError(
          e instanceof ApiError ? e.status : 0,
          e instanceof ApiError ? e.code : "discovery_failed",
          `cluster ${cluster.name} was registered (id ${cluster.id}), but discovery from ${input.host}:${input.port} failed: ${reason}`,
        );
      }
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: queryKeys.clustersOverview() }),
  });
}

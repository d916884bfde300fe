// Adding servers to a cluster from its page: one server (POST …/servers), or a seed and everything it replicates
// with (POST …/discovery); for MariaDB, the cluster's logins first when it has none (PATCH /clusters/{id}: write-only,
// the answer has only `*_set` flags). And discovery from a registered server, whose notes are shown.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "./client";
import { queryKeys } from "./queryKeys";

export type ServerKind = Schemas["ServerKind"];

export interface AddServerInput {
  kind: ServerKind;
  name: string;
  host: string;
  /** Where clients and replicas connect (MariaDB: the SQL port). */
  protocolPort: number | null;
  /** ferryd: the admin API's port; MariaDB: the SQL port again (the control plane speaks SQL to it). */
  adminPort: number | null;
  /** Register it, then discover its masters and replicas from it. */
  discover: boolean;
  /** MariaDB, when the cluster has no logins yet: sent once, never shown again. */
  logins: { dbUser: string; dbPassword: string; replicationUser: string; replicationPassword: string } | null;
}

export interface Added {
  server: Schemas["ServerRead"];
  discovery: Schemas["DiscoveryResult"] | null;
}

/** The POST …/servers body: an empty name is left out (the API names it host:port). */
export function serverBody(input: AddServerInput): Schemas["ServerCreate"] {
  const adminPort = input.kind === "mariadb" ? input.protocolPort : input.adminPort;
  return {
    kind: input.kind,
    host: input.host.trim(),
    promotion_rule: "neutral",
    ...(input.name.trim() ? { name: input.name.trim() } : {}),
    ...(input.protocolPort !== null ? { protocol_port: input.protocolPort } : {}),
    ...(adminPort !== null ? { admin_port: adminPort } : {}),
  };
}

/** The POST …/discovery body for a seed: both ports are required there. */
export function seedBody(
  server: { kind: ServerKind; host: string; protocol_port?: number | null; admin_port?: number | null },
): Schemas["DiscoveryRequest"] | null {
  const adminPort = server.kind === "mariadb" ? (server.admin_port ?? server.protocol_port) : server.admin_port;
  if (server.protocol_port == null || adminPort == null) return null;
  return { kind: server.kind, host: server.host, protocol_port: server.protocol_port, admin_port: adminPort };
}

/** The PATCH /clusters/{id} body of the logins given (empty replication login left out). */
export function loginsBody(logins: NonNullable<AddServerInput["logins"]>): Schemas["ClusterUpdate"] {
  return {
    db_user: logins.dbUser,
    db_password: logins.dbPassword,
    ...(logins.replicationUser
      ? { replication_user: logins.replicationUser, replication_password: logins.replicationPassword }
      : {}),
  };
}

export function useAddServer(clusterId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (input: AddServerInput): Promise<Added> => {
      const path = { cluster_id: clusterId };
      if (input.logins) {
        await unwrap(api.PATCH("/api/v1/clusters/{cluster_id}", { params: { path }, body: loginsBody(input.logins) }));
      }
      const body = serverBody(input);
      if (input.discover) {
        const seed = seedBody({ ...body, kind: input.kind, host: body.host });
        if (seed === null) throw new Error("Discovery needs the server's ports.");
        const discovery = await unwrap(
          api.POST("/api/v1/clusters/{cluster_id}/discovery", { params: { path }, body: { ...seed, ...(body.name ? { name: body.name } : {}) } }),
        );
        return { server: discovery.seed, discovery };
      }
      const server = await unwrap(api.POST("/api/v1/clusters/{cluster_id}/servers", { params: { path }, body }));
      return { server, discovery: null };
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: queryKeys.cluster(clusterId) }),
  });
}

/** POST …/discovery from a registered server: it is known already; what it leads to is registered. */
export function useDiscoverFrom(clusterId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (seed: Schemas["DiscoveryRequest"]) =>
      unwrap(api.POST("/api/v1/clusters/{cluster_id}/discovery", { params: { path: { cluster_id: clusterId } }, body: seed })),
    onSettled: () => queryClient.invalidateQueries({ queryKey: queryKeys.cluster(clusterId) }),
  });
}

/** POST …/servers/{id}/approve (admin): the control plane may then connect to the server's address, with its
 * cluster's credentials. */
export function useApproveServer(clusterId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (serverId: number) =>
      unwrap(
        api.POST("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}/approve", {
          params: { path: { cluster_id: clusterId, registered_server_id: serverId } },
        }),
      ),
    onSettled: () => queryClient.invalidateQueries({ queryKey: queryKeys.cluster(clusterId) }),
  });
}

// Shapes the fake backend answers with: a three-server cluster (a master, two replicas) and operations.
import type { Schemas } from "../api/client";

export const CLUSTER: Schemas["ClusterRead"] = {
  id: 1, name: "prod-eu", description: "", admin_port_offset: 100, node_token_set: false, db_user_set: false,
  db_password_set: false, replication_user_set: false, replication_password_set: false, tls_ca_set: false,
  plaintext_transport: true, auto_failover: false, auto_rejoin: false, enforce_read_only_replicas: true,
  catch_up_parallel_workers: 0,
  failover_suspended_at: null, last_failover_at: null, last_failover_operation_id: null, pre_operation_webhooks: [],
  post_operation_webhooks: [], created_at: "2025-01-01T00:00:00Z", updated_at: "2025-01-01T00:00:00Z",
};

/** A connection's lag in one domain as the API judges it (services/lag.py): no delay unless `over` gives one. */
export const LAG_SHORT: Schemas["DomainLagRead"] = {
  seconds: 0.2, transactions: 3, delay_s: 0, beyond_delay_s: 0.2, level: "low", words: "200 ms · 3 txn",
};

/** CLUSTER as GET /api/v1/clusters/overview answers it: healthy, master "a", two replicas, one passed drill. */
export const CLUSTER_OVERVIEW: Schemas["ClusterOverview"] = {
  ...CLUSTER, health: "healthy", problems: [], masters: ["a"], replica_count: 2, server_count: 3,
  worst_lag: { ...LAG_SHORT, replica: "b (server_id 2)", connection: "main", domain: 1 },
  last_drill: { id: 4, state: "passed", started_at: "2025-01-01T01:30:00Z", rto_s: 0.21 },
};

const node = (id: number, name: string, role: Schemas["TopologyNode"]["role"]): Schemas["TopologyNode"] => ({
  registered_server_id: id, name, label: `${name} (server_id ${id})`, kind: "ferry", version: "ferryd (admin API v1)", host: "127.0.0.1", protocol_port: 7300 + id,
  admin_port: 7400 + id, reported_server_id: id,
  health: "healthy", maintenance: false, read_only: role !== "master", role, gtid_current_pos: `1-1-${100 + id}`,
});

const edge = (linkId: number, replica: number): Schemas["TopologyEdge"] => ({
  link_id: linkId, source: "replica", connection: "main", master_registered_server_id: 1, master_address: "127.0.0.1:7301",
  replica_registered_server_id: replica, running: true, io_state: "connected", sql_state: "applying", waiting_for_relay_space: false,
  lag: { "1": LAG_SHORT }, worst_lag: LAG_SHORT, last_error_code: null, last_error_message: null,
  updated_at: "2025-01-01T00:00:00Z",
});

export const TOPOLOGY: Schemas["TopologyGraph"] = {
  cluster_id: 1,
  nodes: [node(1, "a", "master"), node(2, "b", "replica"), node(3, "c", "replica")],
  edges: [edge(10, 2), edge(11, 3)],
};

type Operation = Schemas["OperationRead"];
type OperationOf<T extends Operation["type"]> = Extract<Operation, { type: T }>;

/** An operation of `over.type` (a switchover when not given) as the API answers it, with `over`'s fields. */
export function operation<T extends Operation["type"] = "switchover">(
  over: Partial<Omit<OperationOf<T>, "type">> & { type?: T },
): OperationOf<T> {
  return {
    id: 1, cluster_id: 1, type: "switchover", state: "pending", dry_run: true, params: {}, steps: [], requester: "ops",
    idempotency_key: null, result: null, error: null, created_at: "2025-01-01T00:00:00Z", started_at: null,
    finished_at: null, ...over,
  } as unknown as OperationOf<T>; // `over` names the type; its params and result are that type's
}

export const step = (name: string, state: Schemas["OperationStep"]["state"], detail: unknown = null): Schemas["OperationStep"] => ({
  name, state, started_at: "2025-01-01T00:00:00Z", finished_at: "2025-01-01T00:00:01Z", duration_s: 0.01, detail,
});

const CAPABILITIES: Record<Schemas["Role"], Schemas["Capability"][]> = {
  viewer: ["can_read"],
  operator: ["can_read", "can_operate"],
  admin: ["can_read", "can_operate", "can_admin"],
};

/** What GET /api/v1/me answers for a token of `role`. */
export function me(role: Schemas["Role"], name = `test-${role}`, expiresAt: string | null = null): Schemas["Me"] {
  return { name, role, capabilities: CAPABILITIES[role], expires_at: expiresAt };
}

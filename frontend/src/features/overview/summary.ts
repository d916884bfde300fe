// A cluster's one-line summary for the overview, from its topology graph (a pure function): health of the
// whole, the master(s), how many replicas, the worst lag over every connection and domain, connection errors.
import type { Schemas } from "../../api/client";
import { worstLag } from "../../lib/format";

type Topology = Schemas["TopologyGraph"];

export type ClusterHealth = "healthy" | "degraded" | "down" | "empty";

export interface ClusterSummary {
  health: ClusterHealth;
  /** Why it is not healthy, in words. */
  problems: string[];
  masters: string[];
  replicaCount: number;
  serverCount: number;
  worstLag: { seconds: number; transactions: number } | null;
}

export function summarize(topology: Topology): ClusterSummary {
  const { nodes, edges } = topology;
  const problems: string[] = [];
  for (const node of nodes) {
    if (node.health !== "healthy") problems.push(`${node.name} ${node.health}`);
    if (node.maintenance) problems.push(`${node.name} in maintenance`);
  }
  const names = new Map(nodes.map((n) => [n.server_id, n.name]));
  for (const edge of edges) {
    const replica = names.get(edge.replica_server_id) ?? `server ${edge.replica_server_id}`;
    if (edge.last_error_code) problems.push(`${replica}: ${edge.last_error_code}`);
    else if (edge.source === "replica" && !edge.running) problems.push(`${replica}: replication stopped`);
  }
  const masters = nodes.filter((n) => n.role === "master").map((n) => n.name);
  const standalone = nodes.filter((n) => n.role === "standalone");
  if (masters.length === 0 && standalone.length === 1) masters.push(standalone[0]!.name);
  if (masters.length > 1) problems.push(`${masters.length} masters`);
  const replicaCount = nodes.filter((n) => n.role === "replica" || n.role === "intermediate").length;
  const unreachable = nodes.filter((n) => n.health === "unreachable").length;

  let health: ClusterHealth = "healthy";
  if (nodes.length === 0) health = "empty";
  else if (unreachable === nodes.length || masters.length === 0) health = "down";
  else if (problems.length > 0) health = "degraded";

  return {
    health,
    problems,
    masters,
    replicaCount,
    serverCount: nodes.length,
    worstLag: worstLag(edges.flatMap((edge) => Object.values(edge.lag))),
  };
}

// Places the topology graph (a pure function): masters on the top row, each replica one row below its master,
// rows ordered by name; a connection whose master is not a registered server gets a placeholder node.
import type { Schemas } from "../../api/client";

type Topology = Schemas["TopologyGraph"];
type Edge = Schemas["TopologyEdge"];

export const NODE_W = 220;
export const NODE_H = 92;
export const GAP_X = 80;
export const GAP_Y = 110;
export const MARGIN = 20;

export interface PlacedNode {
  key: string;
  /** Null for a placeholder (a master address that matches no registered server). */
  node: Topology["nodes"][number] | null;
  label: string;
  x: number;
  y: number;
  depth: number;
}

export interface PlacedEdge {
  edge: Edge;
  from: PlacedNode;
  to: PlacedNode;
}

export interface Layout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

const serverKey = (id: number) => `s${id}`;
const masterKey = (edge: Edge) =>
  edge.master_server_id != null ? serverKey(edge.master_server_id) : `a${edge.master_address ?? "?"}`;

export function layoutTopology(topology: Topology): Layout {
  const labels = new Map<string, { node: PlacedNode["node"]; label: string }>();
  for (const node of topology.nodes) labels.set(serverKey(node.server_id), { node, label: node.name });
  for (const edge of topology.edges) {
    const key = masterKey(edge);
    if (!labels.has(key)) labels.set(key, { node: null, label: edge.master_address ?? "unknown master" });
  }

  const parents = new Map<string, string[]>();
  for (const edge of topology.edges) {
    const child = serverKey(edge.replica_server_id);
    parents.set(child, [...(parents.get(child) ?? []), masterKey(edge)]);
  }

  // Depth = longest chain of masters above (cycles, as in master-master, are cut where they close).
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const depthOf = (key: string): number => {
    const known = depth.get(key);
    if (known !== undefined) return known;
    if (visiting.has(key)) return 0;
    visiting.add(key);
    const ups = parents.get(key) ?? [];
    const d = ups.length === 0 ? 0 : Math.max(...ups.map((up) => depthOf(up) + 1));
    visiting.delete(key);
    depth.set(key, d);
    return d;
  };

  const rows = new Map<number, string[]>();
  for (const key of labels.keys()) {
    const d = depthOf(key);
    rows.set(d, [...(rows.get(d) ?? []), key]);
  }
  const widest = Math.max(1, ...[...rows.values()].map((row) => row.length));
  const width = MARGIN * 2 + widest * NODE_W + (widest - 1) * GAP_X;

  const placed = new Map<string, PlacedNode>();
  for (const [d, keys] of [...rows.entries()].sort((a, b) => a[0] - b[0])) {
    keys.sort((a, b) => labels.get(a)!.label.localeCompare(labels.get(b)!.label));
    const rowWidth = keys.length * NODE_W + (keys.length - 1) * GAP_X;
    const left = (width - rowWidth) / 2;
    keys.forEach((key, i) => {
      const { node, label } = labels.get(key)!;
      placed.set(key, { key, node, label, depth: d, x: left + i * (NODE_W + GAP_X), y: MARGIN + d * (NODE_H + GAP_Y) });
    });
  }
  const depthMax = Math.max(0, ...[...rows.keys()]);
  return {
    nodes: [...placed.values()],
    edges: topology.edges.map((edge) => ({
      edge,
      from: placed.get(masterKey(edge))!,
      to: placed.get(serverKey(edge.replica_server_id))!,
    })),
    width,
    height: MARGIN * 2 + (depthMax + 1) * NODE_H + depthMax * GAP_Y,
  };
}

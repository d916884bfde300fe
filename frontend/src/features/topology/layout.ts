// Places the topology graph (a pure function): masters on the top row, each replica one row below its master,
// rows ordered by name and spread over the width available; a connection whose master is not a registered server
// gets a placeholder node. Each connection's arrow leaves its master and reaches its replica at its own point along
// the box's edge (a multi-source replica's arrows do not converge), and its label is put where it overlaps no
// other label and no box.
import type { Schemas } from "../../api/client";

type Topology = Schemas["TopologyGraph"];
type Edge = Schemas["TopologyEdge"];

export const NODE_W = 220;
export const NODE_H = 104;
export const GAP_X = 80;
/** The widest gap between boxes of a row when there is room to spare. */
export const GAP_X_MAX = 400;
export const GAP_Y = 170;
export const MARGIN = 20;
/** A connection's label box. */
export const LABEL_W = 170;
export const LABEL_H = 50;
/** Where along its arrow a label may sit (0 = master, 1 = replica), in the order tried. */
const LABEL_AT = [0.5, 0.3, 0.7, 0.4, 0.6, 0.2, 0.8];

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
  /** The arrow, from the master's bottom edge to the replica's top edge. */
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  /** The label's centre, on the arrow. */
  labelX: number;
  labelY: number;
}

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

export function overlaps(a: Box, b: Box): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

export const labelBox = (edge: Pick<PlacedEdge, "labelX" | "labelY">): Box => ({
  x: edge.labelX - LABEL_W / 2,
  y: edge.labelY - LABEL_H / 2,
  w: LABEL_W,
  h: LABEL_H,
});

export interface Layout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

const serverKey = (id: number) => `s${id}`;
const masterKey = (edge: Edge) =>
  edge.master_registered_server_id != null ? serverKey(edge.master_registered_server_id) : `a${edge.master_address ?? "?"}`;

/** `availableWidth`: the width the graph may take (0: as narrow as it fits); rows spread over it, up to GAP_X_MAX. */
export function layoutTopology(topology: Topology, availableWidth = 0): Layout {
  const labels = new Map<string, { node: PlacedNode["node"]; label: string }>();
  for (const node of topology.nodes) labels.set(serverKey(node.registered_server_id), { node, label: node.name });
  for (const edge of topology.edges) {
    const key = masterKey(edge);
    if (!labels.has(key)) labels.set(key, { node: null, label: edge.master_address ?? "unknown master" });
  }

  const parents = new Map<string, string[]>();
  for (const edge of topology.edges) {
    const child = serverKey(edge.replica_registered_server_id);
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
  const spare = availableWidth - (MARGIN * 2 + widest * NODE_W);
  const gapX = widest > 1 ? Math.min(GAP_X_MAX, Math.max(GAP_X, spare / (widest - 1))) : GAP_X;
  const width = Math.max(MARGIN * 2 + widest * NODE_W + (widest - 1) * gapX, Math.min(availableWidth, MARGIN * 2 + NODE_W + 2 * GAP_X_MAX));

  const placed = new Map<string, PlacedNode>();
  for (const [d, keys] of [...rows.entries()].sort((a, b) => a[0] - b[0])) {
    keys.sort((a, b) => labels.get(a)!.label.localeCompare(labels.get(b)!.label));
    const rowWidth = keys.length * NODE_W + (keys.length - 1) * gapX;
    const left = (width - rowWidth) / 2;
    keys.forEach((key, i) => {
      const { node, label } = labels.get(key)!;
      placed.set(key, { key, node, label, depth: d, x: left + i * (NODE_W + gapX), y: MARGIN + d * (NODE_H + GAP_Y) });
    });
  }
  const depthMax = Math.max(0, ...[...rows.keys()]);
  const nodes = [...placed.values()];
  return {
    nodes,
    edges: placeEdges(topology.edges.map((edge) => ({ edge, from: placed.get(masterKey(edge))!, to: placed.get(serverKey(edge.replica_registered_server_id))! })), nodes),
    width,
    height: MARGIN * 2 + (depthMax + 1) * NODE_H + depthMax * GAP_Y,
  };
}

/** The n-th of `count` points spread along a box's width. */
const along = (node: PlacedNode, index: number, count: number) => node.x + (NODE_W * (index + 1)) / (count + 1);

function placeEdges(edges: { edge: Edge; from: PlacedNode; to: PlacedNode }[], nodes: readonly PlacedNode[]): PlacedEdge[] {
  // Each box's arrows, in the order of the boxes at their other end (left to right), so they do not cross.
  const outgoing = new Map<string, typeof edges>();
  const incoming = new Map<string, typeof edges>();
  for (const e of edges) {
    outgoing.set(e.from.key, [...(outgoing.get(e.from.key) ?? []), e]);
    incoming.set(e.to.key, [...(incoming.get(e.to.key) ?? []), e]);
  }
  for (const list of outgoing.values()) list.sort((a, b) => a.to.x - b.to.x);
  for (const list of incoming.values()) list.sort((a, b) => a.from.x - b.from.x);
  const obstacles: Box[] = nodes.map((n) => ({ x: n.x, y: n.y, w: NODE_W, h: NODE_H }));
  const placedLabels: Box[] = [];
  return edges.map((e) => {
    const out = outgoing.get(e.from.key)!;
    const into = incoming.get(e.to.key)!;
    const x1 = along(e.from, out.indexOf(e), out.length);
    const y1 = e.from.y + NODE_H;
    const x2 = along(e.to, into.indexOf(e), into.length);
    const y2 = e.to.y;
    const candidates = LABEL_AT.map((t) => ({ labelX: x1 + (x2 - x1) * t, labelY: y1 + (y2 - y1) * t }));
    const free = candidates.find((c) => {
      const box = labelBox(c);
      return !placedLabels.some((other) => overlaps(box, other)) && !obstacles.some((node) => overlaps(box, node));
    });
    const spot = free ?? candidates[0]!;
    placedLabels.push(labelBox(spot));
    return { ...e, x1, y1, x2, y2, ...spot };
  });
}

// The topology graph's layout for seed000's shape (two masters; a multi-source replica of both, `m1` and `m2`; a
// replica of each master): no connection label over another or over a box, a multi-source replica's arrows reaching
// it at separate points, and the rows spread over the width given.
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { TOPOLOGY } from "../../test/fixtures";
import { labelBox, layoutTopology, NODE_H, NODE_W, overlaps } from "./layout";

const base = TOPOLOGY.nodes[0]!;
const node = (id: number, role: Schemas["TopologyNode"]["role"]) => ({ ...base, registered_server_id: id, name: `127.0.0.1:332${id}`, role });
const baseEdge = TOPOLOGY.edges[0]!;
const edge = (link: number, master: number, replica: number, connection: string) => ({
  ...baseEdge, link_id: link, master_registered_server_id: master, replica_registered_server_id: replica, connection,
});

const SEED000: Schemas["TopologyGraph"] = {
  ...TOPOLOGY,
  nodes: [node(1, "master"), node(2, "master"), node(3, "replica"), node(4, "replica"), node(5, "replica")],
  edges: [edge(1, 1, 3, "m1"), edge(2, 2, 3, "m2"), edge(3, 1, 4, "main"), edge(4, 2, 5, "main")],
};

describe("layoutTopology", () => {
  it("puts no connection label over another label or over a server's box", () => {
    for (const width of [0, 900, 1400]) {
      const layout = layoutTopology(SEED000, width);
      const labels = layout.edges.map(labelBox);
      labels.forEach((a, i) => labels.slice(i + 1).forEach((b) => expect(overlaps(a, b), `labels at width ${width}`).toBe(false)));
      for (const label of labels) {
        for (const n of layout.nodes) expect(overlaps(label, { x: n.x, y: n.y, w: NODE_W, h: NODE_H })).toBe(false);
      }
    }
  });

  it("brings a multi-source replica's connections to separate points of its box", () => {
    const layout = layoutTopology(SEED000);
    const [m1, m2] = ["m1", "m2"].map((name) => layout.edges.find((e) => e.edge.connection === name)!);
    expect(m1!.x2).not.toBe(m2!.x2);
    expect(m1!.x2).toBeLessThan(m2!.x2); // m1's master is left of m2's: the arrows do not cross
  });

  it("spreads the rows over the width available, and no wider than needed when there is none", () => {
    const narrow = layoutTopology(SEED000, 0);
    const wide = layoutTopology(SEED000, 1400);
    expect(narrow.width).toBe(20 * 2 + 3 * NODE_W + 2 * 80);
    expect(wide.width).toBeGreaterThan(narrow.width);
    expect(wide.width).toBeLessThanOrEqual(1400);
    const row = wide.nodes.filter((n) => n.depth === 1).map((n) => n.x).sort((a, b) => a - b);
    expect(row[1]! - row[0]! - NODE_W).toBeGreaterThan(80);
  });
});

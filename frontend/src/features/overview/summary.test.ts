// Tests of a cluster's overview summary from its topology.
import { describe, expect, it } from "vitest";
import { TOPOLOGY } from "../../test/fixtures";
import { summarize } from "./summary";

describe("summarize", () => {
  it("gives health, master, replicas and the worst lag", () => {
    expect(summarize(TOPOLOGY)).toEqual({
      health: "healthy",
      problems: [],
      masters: ["a"],
      replicaCount: 2,
      serverCount: 3,
      worstLag: { seconds: 0.2, transactions: 3 },
    });
  });

  it("says why a cluster is degraded, in words", () => {
    const nodes = TOPOLOGY.nodes.map((n) => (n.name === "c" ? { ...n, health: "unreachable" as const } : n));
    const edges = TOPOLOGY.edges.map((e) => (e.replica_server_id === 2 ? { ...e, io_state: "error", last_error_code: "purged" } : e));
    const summary = summarize({ ...TOPOLOGY, nodes, edges });
    expect(summary.health).toBe("degraded");
    expect(summary.problems).toEqual(["c unreachable", "b: purged"]);
  });

  it("is down without a master", () => {
    expect(summarize({ ...TOPOLOGY, nodes: TOPOLOGY.nodes.filter((n) => n.role !== "master"), edges: [] }).health).toBe("down");
  });
});

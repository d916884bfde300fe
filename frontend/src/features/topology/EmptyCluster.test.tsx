// A cluster without servers: the Topology tab says so and how to add them (discovery from a seed, or one server),
// with the cluster's own name in the commands, instead of an empty graph.
import { screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { CLUSTER, TOPOLOGY } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { TopologyView } from "./TopologyView";

describe("an empty cluster", () => {
  it("says it has no servers and how to add them, and draws no graph", async () => {
    mockApi({
      "GET /api/v1/clusters/1": () => ({ body: { ...CLUSTER, name: "orders" } }),
      "GET /api/v1/clusters/1/topology": () => ({ body: { ...TOPOLOGY, nodes: [], edges: [], alerts: [] } }),
      "GET /api/v1/clusters/1/servers": () => ({ body: [] }),
    });
    renderSignedIn(<TopologyView clusterId={1} />, { role: "viewer" });
    const box = await screen.findByRole("region", { name: "No servers yet" });
    expect(await screen.findByText("orders has no servers yet.")).toBeTruthy();
    expect(box.textContent).toContain("ferryctl discover orders --host HOST");
    expect(box.textContent).toContain("POST /api/v1/clusters/1/discovery");
    expect(box.textContent).toContain("ferryctl servers add orders");
    expect(screen.queryByRole("img", { name: /Topology graph/ })).toBeNull();
    expect(screen.queryByRole("heading", { name: "Servers" })).toBeNull();
  });
});

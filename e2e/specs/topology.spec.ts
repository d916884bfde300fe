// The topology tab: the graph draws the three servers and their two replication connections, exactly one server
// is marked master (in the graph and in the servers table, in words), and the master is the one the API names.
import { expect, masterName, openClusterTab, test } from "../fixtures";

test.use({ role: "viewer" });

test("the topology shows three servers, the master marked, and a connection to each replica", async ({ page, stack, api, topology, picture }) => {
  await openClusterTab(page, stack, "topology");

  const graph = topology.graph;
  await expect(graph).toHaveAccessibleName("Topology graph: 3 servers, 2 replication connections");
  await expect(graph).toBeVisible();
  const boxes = graph.getByRole("listitem");
  await expect(boxes).toHaveCount(3);
  const master = await masterName(api, stack);
  await expect(graph.getByRole("listitem", { name: new RegExp(`^${master}: master, healthy`) })).toHaveCount(1);
  await expect(graph.getByRole("listitem", { name: /: replica, healthy/ })).toHaveCount(2);

  const servers = topology.servers;
  await expect(servers.getByRole("row")).toHaveCount(4); // the header and three servers
  await expect(topology.server(master)).toContainText("★ master");
  await expect(servers.getByText("★ master")).toHaveCount(1);

  const connections = topology.connections;
  await expect(connections.getByRole("row")).toHaveCount(3);
  for (const row of await connections.getByRole("row").all().then((rows) => rows.slice(1))) {
    await expect(row.getByRole("cell").first()).toHaveText(master); // every replica replicates from the master
  }
  await picture("topology");
});

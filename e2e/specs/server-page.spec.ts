// A server's own page over the real API: reached from its box in the topology graph (and from the servers table)
// at a path naming the server_id it reports (/clusters/{id}/servers/{registered_server_id} opens that server_id),
// it names the server by label, says its kind, address, role and binlog format, lists its replication connection
// with its settings and its positions per domain, and shows a maintenance set on it with owner and reason.
import { expect, openClusterTab, test } from "../fixtures";
import { mariadbCluster } from "../mariadb";

test.use({ role: "operator" });

test("a server's page shows its connection, its positions and its maintenance", async ({ page, stack, api, client, topology, serverPage }) => {
  const graph = await client.get("/api/v1/clusters/{cluster_id}/topology", { path: { cluster_id: stack.cluster_id } });
  const replica = graph.nodes.find((n) => n.role === "replica")!;
  await openClusterTab(page, stack, "topology");
  await page.getByRole("link", { name: `${replica.name}: open its page` }).click();
  // Its path names it by the server_id it reports, not by the control plane's id.
  await expect(page).toHaveURL(new RegExp(`/clusters/${stack.cluster_id}/servers/${replica.reported_server_id}$`));
  const article = serverPage.article(replica.label);
  await article.expectShown();
  await expect(article.root.getByText("replica", { exact: true })).toBeVisible();
  await expect(article.connections.getByRole("row")).toHaveCount(2);
  await expect(article.connections).toContainText(/main/);
  await expect(article.positions.getByRole("row").nth(1)).toBeVisible();

  await client.put("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}/maintenance", {
    path: { cluster_id: stack.cluster_id, registered_server_id: replica.registered_server_id },
    data: { maintenance: true, reason: "server page check", duration_s: 600 },
  });
  try {
    await expect(article.root).toContainText(/in maintenance by \S+: server page check · ends in (9|10) min/, { timeout: 60_000 });
    await expect(article.audit).toContainText("Set maintenance", { timeout: 60_000 });
  } finally {
    await api.put(`/api/v1/clusters/${stack.cluster_id}/servers/${replica.registered_server_id}/maintenance`, { data: { maintenance: false } });
  }

  // Back, then by the servers table.
  await openClusterTab(page, stack, "topology");
  await topology.servers.getByRole("link", { name: replica.name }).click();
  await article.expectShown();

  // /clusters/{id}/servers/{registered_server_id} opens the server reporting that server_id: on seed000, whose servers the
  // control plane registered after the ferryd cluster's (its ids differ from their server_ids).
  const seed = mariadbCluster(stack, "seed000");
  const seedGraph = await client.get("/api/v1/clusters/{cluster_id}/topology", { path: { cluster_id: seed.id } });
  const first = seedGraph.nodes.find((n) => n.reported_server_id === 1)!;
  expect(first.registered_server_id, "seed000's server_id 1 is registered under another id").not.toBe(1);
  await serverPage.open(seed.id, 1);
  await serverPage.article(first.label).expectShown();
  await expect(page.getByRole("article")).toHaveCount(1);
});

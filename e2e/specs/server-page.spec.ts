// A server's own page over the real API: reached from its box in the topology graph (and from the servers table),
// it names the server by label, says its kind, address, role and binlog format, lists its replication connection
// with its settings and its positions per domain, and shows a maintenance set on it with owner and reason.
import { expect, openClusterTab, test } from "../fixtures";

test("a server's page shows its connection, its positions and its maintenance", async ({ page, signIn, stack, api }) => {
  const topology = (await (await api.get(`/api/v1/clusters/${stack.cluster_id}/topology`)).json()) as {
    nodes: { server_id: number; name: string; label: string; role: string }[];
  };
  const replica = topology.nodes.find((n) => n.role === "replica")!;
  await signIn("operator");
  await openClusterTab(page, stack, "topology");
  await page.getByRole("link", { name: `${replica.name}: open its page` }).click();
  await expect(page).toHaveURL(new RegExp(`/clusters/${stack.cluster_id}/servers/${replica.server_id}$`));
  const article = page.getByRole("article", { name: replica.label });
  await expect(article.getByRole("heading", { level: 2, name: replica.label })).toBeVisible();
  await expect(article.getByText("replica", { exact: true })).toBeVisible();
  const connections = article.getByRole("table", { name: "Replication connections" });
  await expect(connections.getByRole("row")).toHaveCount(2);
  await expect(connections).toContainText(/main/);
  await expect(article.getByRole("table", { name: "Positions per domain" }).getByRole("row").nth(1)).toBeVisible();

  const set = await api.put(`/api/v1/clusters/${stack.cluster_id}/servers/${replica.server_id}/maintenance`, {
    data: { maintenance: true, reason: "server page check", duration_s: 600 },
  });
  expect(set.status(), await set.text()).toBe(200);
  try {
    await expect(article).toContainText(/in maintenance by \S+: server page check · ends in (9|10) min/, { timeout: 30_000 });
    await expect(article.getByRole("list", { name: "Audit rows" })).toContainText("Set maintenance", { timeout: 30_000 });
  } finally {
    await api.put(`/api/v1/clusters/${stack.cluster_id}/servers/${replica.server_id}/maintenance`, { data: { maintenance: false } });
  }

  // Back, then by the servers table.
  await openClusterTab(page, stack, "topology");
  await page.getByRole("table", { name: "Servers" }).getByRole("link", { name: replica.name }).click();
  await expect(article.getByRole("heading", { level: 2, name: replica.label })).toBeVisible();
});

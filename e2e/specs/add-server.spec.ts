// Adding servers from the dashboard over the real API: a new cluster with no server leads an operator to the form;
// they add one of the stack's ferryd replicas by its address alone, then run discovery from it, which registers the
// rest of its replication graph and says so (with its notes) — and the topology shows them. Deleting the cluster
// right after, while the collector records it, answers 204.
import { expect, test } from "../fixtures";

test.use({ role: "operator" });

function hostPort(address: string): [string, string] {
  const url = new URL(address.includes("://") ? address : `tcp://${address}`);
  return [url.hostname, url.port];
}

test("an operator adds a server to an empty cluster and discovers from it", async ({ page, client, stack, topology }) => {
  const name = `e2e-add-${Date.now()}`;
  const { id: clusterId } = await client.post("/api/v1/clusters", { data: { name, node_token: stack.node_token }, status: 201 });
  const replica = stack.nodes[stack.nodes.length - 1];
  const [host, protocolPort] = hostPort(replica.protocol);
  const [, adminPort] = hostPort(replica.admin);

  await topology.open(clusterId, name);
  await expect(topology.empty).toBeVisible();
  await page.getByRole("link", { name: "add a server or discover from one below" }).click();
  const form = page.getByRole("form", { name: "Add a server" });
  await form.getByLabel("Server name").fill("seed-replica");
  await form.getByLabel("Host").fill(host);
  await form.getByLabel("Protocol port").fill(protocolPort);
  await form.getByLabel("Admin port").fill(adminPort);
  await form.getByLabel(/then discover/).uncheck();
  await form.getByRole("button", { name: "Add server" }).click();
  await expect(form.getByRole("status", { name: "Added" })).toHaveText("Added seed-replica.");

  const discover = page.getByRole("group", { name: "Discover from a server" });
  await discover.getByLabel("Discover from").selectOption("seed-replica");
  await discover.getByRole("button", { name: "Discover" }).click();
  const outcome = discover.getByRole("status", { name: "Discovery outcome" });
  await expect(outcome).toContainText(/From seed-replica: added \S/, { timeout: 60_000 });
  await expect(outcome.getByRole("list", { name: "Discovery notes" }).or(outcome.getByText("Discovery had no notes."))).toBeVisible();

  const servers = await client.get("/api/v1/clusters/{cluster_id}/servers", { path: { cluster_id: clusterId } });
  expect(servers.length, JSON.stringify(servers)).toBeGreaterThan(1);
  await expect(topology.servers.getByRole("row")).toHaveCount(servers.length + 1, { timeout: 60_000 });

  await client.delete("/api/v1/clusters/{cluster_id}", { path: { cluster_id: clusterId }, status: 204 });
});

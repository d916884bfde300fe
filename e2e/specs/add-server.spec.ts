// Adding servers from the dashboard over the real API: a new cluster with no server leads an operator to the form;
// they add one of the stack's ferryd replicas by its address alone, then run discovery from it, which registers the
// rest of its replication graph and says so (with its notes) — and the topology shows them.
import { expect, test } from "../fixtures";

function hostPort(address: string): [string, string] {
  const url = new URL(address.includes("://") ? address : `tcp://${address}`);
  return [url.hostname, url.port];
}

test("an operator adds a server to an empty cluster and discovers from it", async ({ page, signIn, api, stack }) => {
  const name = `e2e-add-${Date.now()}`;
  const created = await api.post("/api/v1/clusters", { data: { name, node_token: stack.node_token } });
  expect(created.status(), await created.text()).toBe(201);
  const clusterId = ((await created.json()) as { id: number }).id;
  const replica = stack.nodes[stack.nodes.length - 1];
  const [host, protocolPort] = hostPort(replica.protocol);
  const [, adminPort] = hostPort(replica.admin);

  await signIn("operator");
  await page.goto(`/clusters/${clusterId}/topology`);
  await expect(page.getByRole("region", { name: "No servers yet" })).toBeVisible();
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
  await expect(outcome).toContainText(/From seed-replica: added \S/, { timeout: 30_000 });
  await expect(outcome.getByRole("list", { name: "Discovery notes" }).or(outcome.getByText("Discovery had no notes."))).toBeVisible();

  const servers = (await (await api.get(`/api/v1/clusters/${clusterId}/servers`)).json()) as { name: string }[];
  expect(servers.length, JSON.stringify(servers)).toBeGreaterThan(1);
  await expect(page.getByRole("table", { name: "Servers" }).getByRole("row")).toHaveCount(servers.length + 1, { timeout: 30_000 });

  await api.delete(`/api/v1/clusters/${clusterId}`);
});

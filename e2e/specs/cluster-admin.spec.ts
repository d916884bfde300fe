// Editing and deleting a cluster from its page over the real API: a cluster registered with no server shows how to
// add servers (never a blank graph); an operator renames it and turns automatic failover on, then deletes it by
// typing its name, and the overview no longer lists it. And a server that answers no poll: the collector page names
// it with the error, its link leads to the server's page with the same error, where an operator renames it, then
// removes it by typing its name.
import { expect, test } from "../fixtures";

test.use({ role: "operator" });

test("an empty cluster says how to add servers; an operator edits it, then deletes it", async ({ page, api, client, topology }) => {
  const name = `e2e-empty-${Date.now()}`;
  const { id } = await client.post("/api/v1/clusters", { data: { name }, status: 201 });

  await topology.open(id, name);
  const box = topology.empty;
  await expect(box).toContainText(`${name} has no servers yet.`);
  await expect(box).toContainText(`ferryctl discover ${name}`);

  await page.getByText("Cluster settings").click();
  const renamed = `${name}-b`;
  await page.getByLabel("Name", { exact: true }).fill(renamed);
  await page.getByLabel("Automatic failover").check();
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByRole("heading", { level: 1, name: renamed })).toBeVisible();
  const read = await client.get("/api/v1/clusters/{cluster_id}", { path: { cluster_id: id } });
  expect(read).toMatchObject({ name: renamed, auto_failover: true });

  await page.getByLabel(/to confirm/).fill(renamed);
  await page.getByRole("button", { name: `Delete ${renamed}` }).click();
  await expect(page.getByRole("heading", { name: "Clusters" })).toBeVisible();
  await expect(page.getByRole("link", { name: renamed })).toHaveCount(0);
  expect((await api.get(`/api/v1/clusters/${id}`, { maxRetries: 2 })).status()).toBe(404);
});

test("a server failing its polls is named on the collector page and leads to its page; an operator renames and removes it", async ({ page, api, client }) => {
  const name = `e2e-polls-${Date.now()}`;
  const { id } = await client.post("/api/v1/clusters", { data: { name }, status: 201 });
  try {
    // Nothing listens on port 1: every poll of its admin API fails.
    const server = await client.post("/api/v1/clusters/{cluster_id}/servers", {
      path: { cluster_id: id },
      data: { name: "db-silent", host: "127.0.0.1", protocol_port: 1, admin_port: 1 },
      status: 201,
    });
    await page.goto("/collector");
    const row = page.getByRole("table", { name: "Failed polls by server" }).getByRole("row").filter({ hasText: name });
    await expect(row.getByRole("rowheader")).toHaveText("db-silent (server_id not read yet)", { timeout: 60_000 });
    const error = (await row.getByRole("cell").last().textContent())!;
    expect(error.trim()).not.toBe("");
    await row.getByRole("link").click();
    await expect(page).toHaveURL(new RegExp(`/clusters/${id}/servers/registered-${server.id}$`));
    const article = page.getByRole("article", { name: /^db-silent/ });
    await expect(article.getByText(error, { exact: true })).toBeVisible();

    // Renamed on its page: its label follows.
    await article.getByText("Server settings: edit, rename, remove").click();
    const edit = article.getByRole("form", { name: "Edit the server" });
    await edit.getByLabel("Name").fill("db-renamed");
    await edit.getByRole("button", { name: "Save" }).click();
    await expect(page.getByRole("heading", { level: 2, name: "db-renamed (server_id not read yet)" })).toBeVisible();
    expect((await client.get("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}", { path: { cluster_id: id, registered_server_id: server.id } })).name).toBe("db-renamed");

    // Removed once its name is typed: back on the topology, the cluster has no server.
    const remove = page.getByRole("form", { name: "Remove the server" });
    await remove.getByLabel(/to confirm/).fill("db-renamed");
    await remove.getByRole("button", { name: "Remove db-renamed" }).click();
    await expect(page).toHaveURL(new RegExp(`/clusters/${id}/topology$`));
    expect((await api.get(`/api/v1/clusters/${id}/servers/${server.id}`, { maxRetries: 2 })).status()).toBe(404);
  } finally {
    await api.delete(`/api/v1/clusters/${id}`);
  }
});

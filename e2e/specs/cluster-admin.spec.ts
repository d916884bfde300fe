// Editing and deleting a cluster from its page over the real API: a cluster registered with no server shows how to
// add servers (never a blank graph); an operator renames it and turns automatic failover on, then deletes it by
// typing its name, and the overview no longer lists it.
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
  expect((await api.get(`/api/v1/clusters/${id}`)).status()).toBe(404);
});

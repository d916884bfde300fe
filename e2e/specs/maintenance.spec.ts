// Maintenance from the dashboard over the real API: an operator puts a server in maintenance for a few seconds with
// a reason; the server shows who set it (the operator's token), why and "ends in …"; then, with no reload, the
// maintenance ends by itself — the page shows the server out of maintenance, the API says so, and the worker's
// audit row records the end.
import { expect, test } from "../fixtures";

test.use({ role: "operator" });

test("maintenance expiring by itself", async ({ page, api, client }) => {
  const name = `e2e-maint-${Date.now()}`;
  const { id: clusterId } = await client.post("/api/v1/clusters", { data: { name }, status: 201 });
  const { id: serverId } = await client.post("/api/v1/clusters/{cluster_id}/servers", {
    path: { cluster_id: clusterId },
    data: { name: "db-m", host: "127.0.0.1", protocol_port: 1 },
    status: 201,
  });

  await page.goto(`/clusters/${clusterId}/operations`);
  await page.getByText("Maintenance and fences").click();
  const row = page.getByRole("table", { name: "Server flags" }).getByRole("row", { name: /^db-m / });
  await row.getByRole("button", { name: "Start maintenance" }).click();
  const form = row.getByRole("form", { name: "Maintenance of db-m" });
  await form.getByLabel("Reason").fill("kernel patch");
  await form.getByLabel("For").fill("15");
  await form.getByLabel("Unit").selectOption("seconds");
  await form.getByRole("button", { name: "Put db-m in maintenance" }).click();

  await expect(row).toContainText(/in maintenance by e2e-operator-\d+: kernel patch · ends in \d/);

  // No reload from here on: the page itself sees the end.
  await expect(row).not.toContainText("in maintenance", { timeout: 60_000 });
  await expect(row.getByRole("button", { name: "Start maintenance" })).toBeVisible();
  const read = await client.get("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}", { path: { cluster_id: clusterId, registered_server_id: serverId } });
  expect(read.maintenance).toBe(false);
  await expect
    .poll(
      async () => {
        const audit = await client.get("/api/v1/audit", { query: { cluster_id: clusterId } });
        return audit.find((e) => e.action === "maintenance_expired")?.details.reason ?? null;
      },
      { timeout: 60_000, message: "the worker records the end of the maintenance" },
    )
    .toBe("kernel patch");

  await api.delete(`/api/v1/clusters/${clusterId}`);
});

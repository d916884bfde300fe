// Maintenance from the dashboard over the real API: an operator puts a server in maintenance for a few seconds with
// a reason; the server shows who set it (the operator's token), why and "ends in …"; then, with no reload, the
// maintenance ends by itself — the page shows the server out of maintenance, the API says so, and the worker's
// audit row records the end.
import { expect, test } from "../fixtures";

test("maintenance expiring by itself", async ({ page, signIn, api }) => {
  const name = `e2e-maint-${Date.now()}`;
  const created = await api.post("/api/v1/clusters", { data: { name } });
  expect(created.status(), await created.text()).toBe(201);
  const clusterId = ((await created.json()) as { id: number }).id;
  const added = await api.post(`/api/v1/clusters/${clusterId}/servers`, {
    data: { name: "db-m", host: "127.0.0.1", protocol_port: 1 },
  });
  expect(added.status(), await added.text()).toBe(201);
  const serverId = ((await added.json()) as { id: number }).id;

  await signIn("operator");
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
  const read = await api.get(`/api/v1/clusters/${clusterId}/servers/${serverId}`);
  expect(((await read.json()) as { maintenance: boolean }).maintenance).toBe(false);
  await expect
    .poll(
      async () => {
        const audit = (await (await api.get(`/api/v1/audit?cluster_id=${clusterId}`)).json()) as { action: string; details: { reason?: string } }[];
        return audit.find((e) => e.action === "maintenance_expired")?.details.reason ?? null;
      },
      { timeout: 60_000, message: "the worker records the end of the maintenance" },
    )
    .toBe("kernel patch");

  await api.delete(`/api/v1/clusters/${clusterId}`);
});

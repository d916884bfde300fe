// History that tells, on the stack's ferryd cluster: a switchover's dry run started through the API is in the audit
// log as a dry run (marked, not a "switchover · succeeded" like a real one), its row links its operation, and the link
// opens the operations tab at that operation; a real operation (a replica's read-only flag set on, as it already is:
// nothing changes for the specs that follow) is marked on the lag chart as soon as it ended, the chart's request for
// every operation type answered.
import { expect, openClusterTab, test } from "../fixtures";
import { operationSucceeded } from "../runs";

test.use({ role: "operator" });

test("a dry run's audit row is marked and links its operation; the lag chart marks the operation just run", async ({
  page, client, stack,
}) => {
  const cluster = stack.cluster_id;
  const { id: dryId } = await client.post("/api/v1/clusters/{cluster_id}/operations/switchover", {
    path: { cluster_id: cluster },
    data: { dry_run: true },
    status: 202,
  });

  await page.goto(`/audit?cluster=${cluster}&action=switchover`);
  const table = page.getByRole("table", { name: "Audit log" });
  const row = table.getByRole("row").filter({ has: page.locator(`[data-operation="${dryId}"]`) });
  await expect(row).toHaveCount(1);
  await expect(row).toHaveAttribute("data-kind", "dry_run");
  await expect(row.getByRole("cell").nth(2)).toHaveText("◇ dry run");
  await expect(row).toContainText(`Switchover #${dryId} (dry run)`);
  await expect(row.getByRole("cell").first()).toHaveText(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
  await row.getByRole("link", { name: `Switchover #${dryId}` }).click();
  await expect(page).toHaveURL(new RegExp(`/clusters/${cluster}/operations#operation-${dryId}$`));
  const linked = page.locator(`#operation-${dryId}`);
  await expect(linked).toHaveAttribute("aria-current", "true");
  await expect(linked).toContainText("(dry run)");

  // A real operation, then the lag chart: it is marked there, and the operations request was answered.
  const topology = await client.get("/api/v1/clusters/{cluster_id}/topology", { path: { cluster_id: cluster } });
  const replica = topology.nodes.find((node) => node.role === "replica")!;
  const { id: runId } = await client.post("/api/v1/clusters/{cluster_id}/operations/read-only", {
    path: { cluster_id: cluster },
    data: { registered_server_id: replica.registered_server_id, read_only: true },
    status: 202,
  });
  await operationSucceeded(client, cluster, runId, 60_000);
  const answered = page.waitForResponse((r) => r.url().includes(`/api/v1/clusters/${cluster}/operations?`) && r.url().includes("type="));
  await openClusterTab(page, stack, "lag");
  expect((await answered).status()).toBe(200);
  const seconds = page.getByRole("figure", { name: "Lag in seconds" });
  await expect(seconds.locator(`[data-operation="${runId}"]`)).toContainText(`read only #${runId} (succeeded)`, { timeout: 60_000 });
  // Drawn in the chart, too: a line at each marked operation's start (a zero-width SVG line, so counted, not "visible").
  await expect.poll(() => seconds.locator(".operation-mark").count()).toBeGreaterThan(0);
  await expect(page.getByText("Operations cannot be marked")).toHaveCount(0);
});

// A failover drill from the UI on the stack's ferryd cluster under its demo workload: the kind chosen in the form,
// previewed first (the master it would fence and the replica it would promote, nothing moves), then run for real
// after the typed confirmation — the master fenced alive and failed over, the old master rejoined, the role switched
// back — and shown as passed with its RTO and an RPO of nothing lost, in the outcome and in the history.
import { currentMasterName, expect, masterName, openClusterTab, test } from "../fixtures";

test.use({ role: "operator" });

test("a failover drill run from the UI passes with its RTO and RPO and switches back", async ({ page, stack, api }) => {
  const masterBefore = await masterName(api, stack);
  await openClusterTab(page, stack, "drills");

  const form = page.getByRole("group", { name: "Run a drill now" });
  await form.getByRole("radio", { name: /^failover/ }).check();
  await expect(form.getByRole("checkbox", { name: /switch back/ })).toBeChecked();

  await form.getByRole("button", { name: "Preview (dry run)" }).click();
  const preview = form.getByRole("region", { name: "Failover plan" });
  await expect(preview.getByRole("heading", { name: new RegExp(`^Failover: .+ replaces ${masterBefore} `) })).toBeVisible({ timeout: 60_000 });
  expect(await currentMasterName(api, stack)).toBe(masterBefore);

  await form.getByLabel(/Type the cluster name/).fill(stack.cluster_name);
  await form.getByRole("button", { name: "Run drill now" }).click();
  const outcome = form.locator(".drill-outcome");
  await expect(outcome).toContainText(/Failover drill #\d+: ✓ passed/, { timeout: 150_000 });
  await expect(outcome).toContainText(/RTO \d[\d.]* m?s · RPO 0 lost/);
  const runId = /drill #(\d+)/.exec((await outcome.textContent()) ?? "")?.[1];
  const figures = outcome.getByRole("region", { name: `Failover figures of drill #${runId}` });
  await expect(figures).toContainText("rejoined as a replica");

  const history = page.getByRole("table", { name: "Drill history" });
  const row = history.getByRole("row").filter({ has: page.getByRole("cell", { name: runId, exact: true }) });
  await expect(row).toHaveAttribute("data-state", "passed");
  await expect(row.getByRole("cell", { name: "failover", exact: true })).toBeVisible();
  await expect(row.getByRole("cell", { name: "0 lost", exact: true })).toBeVisible();

  // Switched back: the master is the one it was before (the topology follows within a collector poll or two).
  await expect.poll(() => currentMasterName(api, stack)).toBe(masterBefore);
});

// A drill run from the UI: previewed first (its dry run shows the plan, nothing moves), then rotation candidate,
// switch back, typed confirmation; it runs for real (canaries,
// switchover, verification, switch back) and appears as passed in the history with its RTO and what its live
// canary writer saw.
import { currentMasterName, expect, masterName, openClusterTab, test } from "../fixtures";

test.use({ role: "operator" });

test("a drill run from the UI passes and appears as passed in the history", async ({ page, stack, api, picture }) => {
  const masterBefore = await masterName(api, stack);
  await openClusterTab(page, stack, "drills");

  const form = page.getByRole("group", { name: "Run a drill now" });
  await expect(form.getByRole("radio", { name: /rotation/ })).toBeChecked();
  await expect(form.getByRole("checkbox", { name: /switch back/ })).toBeChecked();

  // First its dry run: the preflight and the plan per domain, the master named as the source, nothing changed.
  await form.getByRole("button", { name: "Preview (dry run)" }).click();
  const preview = form.getByRole("region", { name: "Drill preview" });
  await expect(preview.getByRole("heading", { name: new RegExp(`^Plan: .+ replaces ${masterBefore}`) })).toBeVisible({ timeout: 60_000 });
  await expect(preview.getByRole("table", { name: "Positions per domain before the switchover" })).toBeVisible();
  expect(await currentMasterName(api, stack)).toBe(masterBefore);

  const run = form.getByRole("button", { name: "Run drill now" });
  await expect(run).toBeDisabled();
  await form.getByLabel(/Type the cluster name/).fill(stack.cluster_name);
  await run.click();

  const outcome = form.locator(".drill-outcome");
  await expect(outcome).toContainText(/Drill #\d+: ✓ passed/, { timeout: 150_000 });
  await expect(outcome).toContainText(/RTO \d/);
  const runId = /Drill #(\d+)/.exec((await outcome.textContent()) ?? "")?.[1];

  const history = page.getByRole("table", { name: "Drill history" });
  const row = history.getByRole("row").filter({ has: page.getByRole("cell", { name: runId, exact: true }) });
  await expect(row).toHaveAttribute("data-state", "passed");
  await expect(row).toContainText("passed");
  // The live canary writer's report beside the RTO: its window, its writes, nothing lost; per phase when opened.
  const writer = row.locator(".writer-report summary");
  await expect(writer).toHaveText(/^window \d[\d.]* m?s · \d+ acknowledged, \d+ refused, \d+ unknown · none lost$/);
  await writer.click();
  const phases = row.getByRole("table", { name: `Canary writer of drill #${runId}` });
  for (const phase of ["before", "during", "after"]) await expect(phases.getByRole("row", { name: new RegExp(phase) })).toBeVisible();
  await picture("drills");

  // Switched back: the master is the one it was before (the topology follows within a collector poll or two).
  await expect.poll(() => currentMasterName(api, stack)).toBe(masterBefore);
});

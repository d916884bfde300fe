// A planned switchover through the UI, as an operator does it: preview (the preflight as a checklist, every check
// passed), type the cluster's name, switch over, follow the steps to the end; the new master is then the one the
// topology shows, every step passed, and the unavailability window is reported.
import { currentMasterName, expect, masterName, openClusterTab, test } from "../fixtures";
import { nodeAuth } from "../stack";

test("a switchover with typed confirmation ends with the new master shown and every step done", async ({ page, signIn, stack, api, picture }) => {
  const oldMaster = await masterName(api, stack);
  await signIn("operator");
  await openClusterTab(page, stack, "operations");

  const form = page.getByRole("group", { name: "Switchover" });
  await expect(form).toContainText(`Current master: ${oldMaster}`);
  // The candidate left to the orchestrator: the best replica.
  await expect(form.getByRole("combobox", { name: /New master/ })).toHaveValue("best");
  await form.getByRole("button", { name: "Preview (dry run)" }).click();

  const checks = form.getByRole("list", { name: "Preflight checks" }).getByRole("listitem");
  await expect(checks.first()).toBeVisible();
  await expect(checks.filter({ hasText: "failed" })).toHaveCount(0);
  expect(await checks.count()).toBeGreaterThan(3);

  const run = form.getByRole("button", { name: "Switch over" });
  await expect(run).toBeDisabled();
  const confirmation = form.getByLabel(/Type the cluster name/);
  await confirmation.fill(`${stack.cluster_name}-typo`);
  await expect(form.getByText("✕ does not match")).toBeVisible();
  await expect(run).toBeDisabled();
  await confirmation.fill(stack.cluster_name);
  await expect(form.getByText("✓ matches")).toBeVisible();
  await run.click();

  const outcome = form.getByRole("status").filter({ hasText: "✓ Done." });
  await expect(outcome).toBeVisible({ timeout: 120_000 });
  await expect(outcome).toContainText(`(was ${oldMaster})`);
  await expect(outcome).toContainText(/Writes were unavailable for \d/);
  const newMaster = /(node\d) is the master/.exec((await outcome.textContent()) ?? "")?.[1];
  expect(newMaster).toBeDefined();
  expect(newMaster).not.toBe(oldMaster);

  const steps = form.getByRole("list", { name: "Steps" }).getByRole("listitem");
  expect(await steps.count()).toBeGreaterThan(3);
  for (const step of await steps.all()) {
    await expect(step).toHaveAttribute("data-state", /^(passed|skipped)$/);
  }
  await expect(steps.filter({ hasText: "passed" }).first()).toBeVisible();
  await picture("switchover");

  // The topology follows: the new master marked, the old one a replica of it.
  await page.getByRole("link", { name: "Topology" }).click();
  const servers = page.getByRole("table", { name: "Servers" });
  await expect(servers.getByRole("row", { name: new RegExp(`^${newMaster} `) })).toContainText("★ master");
  await expect(servers.getByRole("row", { name: new RegExp(`^${oldMaster} `) })).toContainText("replica");
  await expect(page.getByRole("img", { name: /2 replication connections$/ })).toBeVisible();
  await expect.poll(() => currentMasterName(api, stack)).toBe(newMaster);

  // The demo workload follows the master: the new master writes transactions of its own server id.
  const node = stack.nodes.find((n) => n.name === newMaster)!;
  const serverId = newMaster!.replace("node", "");
  await expect
    .poll(async () => ((await (await api.get(`${node.admin}/v1/status`, nodeAuth(stack))).json()) as { gtid_binlog_pos: string }).gtid_binlog_pos)
    .toMatch(new RegExp(`(^|,)\\d+-${serverId}-\\d+`));
});

// A planned switchover through the UI, as an operator does it: preview (the preflight as a checklist, every check
// passed), type the cluster's name, switch over, follow the steps to the end; the new master is then the one the
// topology shows, every step passed, and the unavailability window is reported.
import { currentMasterName, expect, masterName, openClusterTab, test } from "../fixtures";
import { nodeAuth } from "../stack";

test.use({ role: "operator" });

test("a switchover with typed confirmation ends with the new master shown and every step done", async ({
  page, stack, api, switchoverForm, topology, picture,
}) => {
  const oldMaster = await masterName(api, stack);
  await openClusterTab(page, stack, "operations");

  const { form, checks } = switchoverForm;
  await expect(form).toContainText(`Current master: ${oldMaster}`);
  // The candidate left to the orchestrator: the best replica.
  await expect(switchoverForm.candidate).toHaveValue("best");
  await switchoverForm.preview();

  await expect(checks.first()).toBeVisible();
  await expect(checks.filter({ hasText: "failed" })).toHaveCount(0);
  expect(await checks.count()).toBeGreaterThan(3);

  const { run, confirmation } = switchoverForm;
  await expect(run).toBeDisabled();
  await confirmation.fill(`${stack.cluster_name}-typo`);
  await expect(form.getByText("✕ does not match")).toBeVisible();
  await expect(run).toBeDisabled();
  await confirmation.fill(stack.cluster_name);
  await expect(form.getByText("✓ matches")).toBeVisible();
  await run.click();

  const outcome = switchoverForm.done;
  await expect(outcome).toBeVisible({ timeout: 120_000 });
  await expect(outcome).toContainText(`(was ${oldMaster})`);
  await expect(outcome).toContainText(/Writes were unavailable for \d/);
  // The finished run shows its result; the preview it ran from is folded away, no stale checklist above it.
  await expect(form.getByRole("region", { name: "Result" })).toContainText(`(was ${oldMaster})`);
  await expect(checks).toHaveCount(0);
  const newMaster = /(node\d) is the master/.exec((await outcome.textContent()) ?? "")?.[1];
  expect(newMaster).toBeDefined();
  expect(newMaster).not.toBe(oldMaster);

  const steps = switchoverForm.steps;
  expect(await steps.count()).toBeGreaterThan(3);
  for (const step of await steps.all()) {
    await expect(step).toHaveAttribute("data-state", /^(passed|skipped)$/);
  }
  await expect(steps.filter({ hasText: "passed" }).first()).toBeVisible();
  await picture("switchover");

  // The topology follows: the new master marked, the old one a replica of it.
  await page.getByRole("link", { name: "Topology" }).click();
  await expect(topology.server(newMaster!)).toContainText("★ master");
  await expect(topology.server(oldMaster)).toContainText("replica");
  await expect(page.getByRole("img", { name: /2 replication connections$/ })).toBeVisible();
  await expect.poll(() => currentMasterName(api, stack)).toBe(newMaster);

  // The demo workload follows the master: the new master writes transactions of its own server id.
  const node = stack.nodes.find((n) => n.name === newMaster)!;
  const serverId = newMaster!.replace("node", "");
  await expect
    .poll(async () => ((await (await api.get(`${node.admin}/v1/status`, nodeAuth(stack))).json()) as { gtid_binlog_pos: string }).gtid_binlog_pos)
    .toMatch(new RegExp(`(^|,)\\d+-${serverId}-\\d+`));
});

// The two-master shape's intermediate master moved through the UI, as an operator does it: on the seed000 cluster (two masters,
// server 3 a multi-source hub, servers 4 and 5 below it) the switchover form asks for the source; the operator picks
// the hub and server 5, reads the plan per domain in the preview (each server's position in domains 1 and 2, what
// each replicates from afterwards), types the cluster's name and runs it; the topology redraws with server 5
// replicating m1 and m2 from the masters and server 3 below it. Then the role goes back the same way, leaving the
// stack as it was. The demo's report, which locks a table on server 5 for 8 s of every 20, is paused for the moves.
import { mariadbCluster, type MariadbCluster } from "../mariadb";
import { expect, test } from "../fixtures";
import type { SwitchoverForm } from "../pages/switchover";
import { whileSignalled } from "../stack";

test.use({ role: "operator" });

/** Runs `moves` with the demo "report" paused (scripts/mariadb_report_lock.py: SIGUSR1, by the pid the stack
 * recorded; SIGUSR2 after, whatever happens). The report locks domain 1's table on server 5 for 8 s of every 20, and a
 * move that needs server 5's SQL thread to stop within its statement bound during it is undone: an operator would
 * hold off such a report for a planned move, and waiting for a free moment of its cycle instead cost this spec 20 s
 * per move. Server 5's applier no longer waiting on the lock says the report let it go. */
async function reportPaused(seed: MariadbCluster, moves: () => Promise<void>): Promise<void> {
  if (!seed.reportLockPidFile) throw new Error(`the stack recorded no demo report for ${seed.name}`);
  const waiting = () =>
    Number(seed.sql(5, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table%'")[0]![0]);
  await whileSignalled(seed.reportLockPidFile, "demo report", ["SIGUSR1", "SIGUSR2"], async () => {
    await expect.poll(waiting, { timeout: 30_000, message: "the paused demo report to let go of its lock on server 5" }).toBe(0);
    await moves();
  });
}

async function moveHub(switchover: SwitchoverForm, seed: MariadbCluster, from: string, to: string): Promise<void> {
  // Should a move still be undone (the servers as they were, the operation saying why), an operator runs it again;
  // so does this test, a bounded number of times.
  for (let attempt = 1; ; attempt++) {
    const outcome = await tryMoveHub(switchover, seed, from, to);
    if (outcome === "done") return;
    expect(attempt, `the move was undone ${attempt} times: ${outcome}`).toBeLessThan(4);
    await switchover.form.getByRole("button", { name: "Start a new switchover" }).click();
  }
}

async function tryMoveHub(switchover: SwitchoverForm, seed: MariadbCluster, from: string, to: string): Promise<string> {
  const clusterName = seed.name;
  const { page, form, checks, plan } = switchover;
  await expect(form).toContainText("choose the source whose role moves");
  await switchover.choose(switchover.source, from);
  await switchover.choose(switchover.candidate, to);

  // The preflight may find the candidate behind for a moment (the demo report holds a lock on server 5 for 8 s of
  // every 20): preview until every check passes, as an operator would.
  await expect(async () => {
    await switchover.preview();
    await expect(checks.first()).toBeVisible();
    await expect(checks.filter({ hasText: "failed" })).toHaveCount(0);
    await expect(switchover.run).toBeVisible();
  }).toPass({ timeout: 90_000 });

  // The plan per domain: the source and the candidate, each server's position in both domains, what follows whom.
  await expect(form.getByRole("heading", { name: new RegExp(`Plan: ${to} \\(server_id \\d+\\) replaces ${from} \\(server_id \\d+\\)`) })).toBeVisible();
  await expect(plan.getByRole("columnheader")).toContainText(["Server", "Domain 1", "Domain 2", "Replicates from afterwards"]);
  const candidateRow = plan.getByRole("row").filter({ has: page.getByRole("rowheader", { name: new RegExp(to) }) });
  await expect(candidateRow).toContainText("'m1' from");
  await expect(candidateRow).toContainText("'m2' from");
  await expect(candidateRow).toContainText(/1-1-\d+/);

  await switchover.confirmation.fill(clusterName);
  const { done, failed } = switchover;
  await expect(failed).toHaveCount(0); // no earlier attempt's outcome
  await switchover.run.click();
  // However it ends: done, undone (run again), or failed otherwise, which fails the spec with what the form said.
  await expect(done.or(failed).first(), "the switchover to end (done, undone or failed)").toBeVisible({ timeout: 120_000 });
  if (await done.isVisible()) return "done";
  const error = (await failed.first().textContent()) ?? "";
  if (!error.includes("undone")) {
    const steps = await switchover.steps.allTextContents();
    throw new Error(`the switchover failed without being undone: ${error}\nsteps:\n${steps.join("\n")}`);
  }
  return error;
}

test("an operator moves seed000's hub to a replica and back, reading the plan per domain", async ({ page, stack, switchoverForm, topology }) => {
  const seed = mariadbCluster(stack, "seed000");
  const [m1, m2, hub, candidate] = [1, 2, 3, 5].map((n) => seed.server(n).address);
  await page.goto(`/clusters/${seed.id}/operations`);
  await expect(page.getByRole("heading", { level: 1, name: "seed000" })).toBeVisible();

  await reportPaused(seed, async () => {
    await moveHub(switchoverForm, seed, hub!, candidate!);

    // The topology redraws: the candidate replicates m1 and m2 from the masters, the old hub from the candidate.
    await page.getByRole("link", { name: "Topology" }).click();
    const rowsOf = (replica: string) => topology.connectionsOf(replica);
    for (const [name, master] of [["m1", m1], ["m2", m2]]) {
      await expect(rowsOf(candidate!).filter({ hasText: master! })).toContainText(name!);
    }
    await expect(rowsOf(hub!).filter({ hasText: candidate! })).toHaveCount(1);
    await expect(rowsOf(hub!).filter({ hasText: m1! })).toHaveCount(0);

    // And back, so the stack is as the other specs expect it.
    await page.getByRole("link", { name: "Operations" }).click();
    await moveHub(switchoverForm, seed, candidate!, hub!);
    await page.getByRole("link", { name: "Topology" }).click();
    await expect(rowsOf(hub!).filter({ hasText: m1! })).toContainText("m1");
    await expect(rowsOf(hub!).filter({ hasText: m2! })).toContainText("m2");
  });
});

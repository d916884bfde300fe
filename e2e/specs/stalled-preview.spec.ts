// Preflight sees what the operator sees: on seed000 the demo report holds domain 1's table on server 5 for 8 s of every
// 20 s, and server 5 then applies nothing while domain 1's transactions wait. A switchover's preview of the hub to
// server 5, asked while the lock is held, says so in its advice — server 5 stalled in domain 1, with what the hub's
// move would do about it — and changes nothing.
import { mariadbCluster } from "../mariadb";
import { expect, test } from "../fixtures";

test.use({ role: "operator" });

test("a candidate stalled under a lock is flagged in the switchover's preview", async ({ page, stack, switchoverForm }) => {
  const seed = mariadbCluster(stack, "seed000");
  const [hub, candidate] = [3, 5].map((n) => seed.server(n).address);
  const waiting = () =>
    Number(seed.sql(5, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table%'")[0]![0]);
  await page.goto(`/clusters/${seed.id}/operations`);
  await expect(page.getByRole("heading", { level: 1, name: "seed000" })).toBeVisible();
  await switchoverForm.choose(switchoverForm.source, hub!);
  await switchoverForm.choose(switchoverForm.candidate, candidate!);

  // Previewed while server 5's applier waits on the report's lock (asked again, as an operator would, until a preview
  // falls inside one of the report's 8 s holds).
  const advice = switchoverForm.form.getByRole("region", { name: "Advice" });
  await expect(async () => {
    await expect.poll(waiting, { timeout: 60_000, message: "the demo report to lock domain 1's table on server 5" }).toBeGreaterThan(0);
    await switchoverForm.preview();
    await expect(advice.getByText(/is stalled in domain 1: it applied nothing in [\d.]+ s while [\d,]+ transaction\(s\) wait/)).toBeVisible({ timeout: 60_000 });
  }).toPass({ timeout: 100_000 });
  // The hub's move holds no writes: it would wait for server 5 to reach the hub's position, and be undone at its bound.
  await expect(advice).toContainText(`a move of ${hub!} (server_id 3)'s role now would wait for it to reach`);
  await expect(advice).toContainText("at its bound, be undone — find what holds it, or choose another candidate");
  await expect(advice).toContainText(`${candidate!} (server_id 5) is stalled in domain 1`);
  // A preview: nothing ran.
  await expect(switchoverForm.done).toHaveCount(0);
  await expect(switchoverForm.steps).toHaveCount(0);
});

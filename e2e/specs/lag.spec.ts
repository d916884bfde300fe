// Lag: Recharts charts of lag per replica per domain, drawn from the collector's samples and live: the number of
// points grows while the page stays open.
import { expect, openClusterTab, test } from "../fixtures";

test("the lag charts have data points, and they move while the page is live", async ({ page, signIn, stack, picture }) => {
  await signIn("viewer");
  await openClusterTab(page, stack, "lag", "?range=5m");

  const seconds = page.getByRole("figure", { name: "Lag in seconds" });
  const transactions = page.getByRole("figure", { name: "Lag in transactions" });
  const points = async () => Number(await transactions.getAttribute("data-points"));
  await expect.poll(points).toBeGreaterThan(0);
  await expect(seconds.locator(".recharts-line path.recharts-curve").first()).toHaveAttribute("d", /^M[\d.,-]+L/);

  const before = await points();
  const pathBefore = await transactions.locator(".recharts-line path.recharts-curve").first().getAttribute("d");
  // New samples arrive as the workload runs (the collector polls every second; the page refetches live).
  await expect.poll(points, { timeout: 30_000 }).toBeGreaterThan(before);
  await expect
    .poll(() => transactions.locator(".recharts-line path.recharts-curve").first().getAttribute("d"))
    .not.toBe(pathBefore);
  await expect(page.getByRole("checkbox", { name: /^domain \d+$/ })).not.toHaveCount(0);
  await picture("lag");
});

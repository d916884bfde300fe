// Lag: Recharts charts of lag per replica per domain, drawn from the collector's samples (recorded when lag
// changes) and live: the range follows the clock, so the drawn points move while the page stays open.
import { expect, openClusterTab, test } from "../fixtures";

test("the lag charts have data points, and they move while the page is live", async ({ page, signIn, stack, picture }) => {
  await signIn("viewer");
  await openClusterTab(page, stack, "lag", "?range=5m");

  const seconds = page.getByRole("figure", { name: "Lag in seconds" });
  const transactions = page.getByRole("figure", { name: "Lag in transactions" });
  const points = async () => Number(await transactions.getAttribute("data-points"));
  await expect.poll(points).toBeGreaterThan(0);
  await expect(seconds.locator(".recharts-line path.recharts-curve").first()).toHaveAttribute("d", /^M[\d.,-]+L/);

  const line = transactions.locator(".recharts-line path.recharts-curve").first();
  const lastTick = transactions.getByText(/^\d\d:\d\d:\d\d$/).last(); // the time axis' last label
  const pathBefore = await line.getAttribute("d");
  const tickBefore = await lastTick.textContent();
  // The page refetches every 2 s (and on server-sent events): the range's end moves on, and the line with it.
  await expect.poll(() => line.getAttribute("d")).not.toBe(pathBefore);
  await expect.poll(() => lastTick.textContent()).not.toBe(tickBefore);
  await expect.poll(points).toBeGreaterThan(0);
  await expect(page.getByRole("checkbox", { name: /^domain \d+$/ })).not.toHaveCount(0);
  await picture("lag");
});

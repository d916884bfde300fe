// Lag: Recharts charts of lag per replica per domain, drawn from the collector's samples (recorded when lag
// changes) and live: the range follows the clock, so the drawn points move while the page stays open. The legend's
// entries hide and show their series' line.
import { expect, openClusterTab, test } from "../fixtures";

test.use({ role: "viewer" });

test("the lag charts have data points, and they move while the page is live", async ({ page, stack, picture }) => {
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

test("pressing a series' legend entry removes its line from the chart, pressing it again brings it back", async ({ page, stack }) => {
  await openClusterTab(page, stack, "lag", "?range=15m&live=paused");

  const chart = page.getByRole("figure", { name: "Lag in seconds" });
  const drawn = chart.locator(".recharts-line path.recharts-curve");
  const entries = chart.getByRole("list", { name: /series/ }).getByRole("button");
  await expect.poll(() => entries.count(), { message: "the legend lists a series per replica and domain" }).toBeGreaterThan(1);
  const total = await entries.count();
  await expect(drawn).toHaveCount(total);

  const entry = entries.first();
  const color = await entry.locator("svg path").getAttribute("stroke");
  // Past the palette's length (a cluster whose replicas moved between masters has a series per master) a colour is
  // shared: the lines of this colour are as many as the entries of this colour, and one fewer once it is hidden.
  const colors = await entries.locator("svg path").evaluateAll((paths) => paths.map((p) => p.getAttribute("stroke")));
  const sharing = colors.filter((c) => c === color).length;
  await expect(drawn.and(page.locator(`[stroke="${color}"]`))).toHaveCount(sharing);
  await entry.click();
  await expect(entry).toHaveAttribute("aria-pressed", "false");
  await expect(drawn).toHaveCount(total - 1);
  await expect(drawn.and(page.locator(`[stroke="${color}"]`))).toHaveCount(sharing - 1);
  await expect(chart).toContainText(`${total - 1} of ${total} series shown`);

  await entry.click();
  await expect(entry).toHaveAttribute("aria-pressed", "true");
  await expect(drawn).toHaveCount(total);
});

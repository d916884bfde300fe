// Stream interleavings: one lane per server, blocks coloured by domain and labelled domain-seq; hovering a
// transaction (or reaching it by keyboard: Tab, then the arrow keys) highlights the same GTID in every lane (seed
// 000's figure: each domain's order kept, the interleaving free to differ).
import { expect, openClusterTab, test } from "../fixtures";

test("lanes show several domains; hovering or moving by keyboard highlights one GTID in every lane", async ({ page, signIn, stack, picture }) => {
  await signIn("viewer");
  await openClusterTab(page, stack, "interleavings");

  const lanes = page.getByRole("group", { name: /^Binlog of / });
  await expect(lanes).toHaveCount(3);
  // The demo workload writes three domains: wait until at least two show (a fresh stack may have few yet).
  await expect
    .poll(async () => {
      const labels = await page.locator(".lane .block").evaluateAll((blocks) => blocks.map((b) => b.getAttribute("aria-label") ?? ""));
      return new Set(labels.map((l) => /domain (\d+)/.exec(l)?.[1]).filter(Boolean)).size;
    })
    .toBeGreaterThanOrEqual(2);

  // Freeze the view (live updates would move the blocks under the pointer), then hover a transaction every
  // server has.
  await page.getByRole("button", { name: "Pause" }).click();
  await expect(page.getByRole("button", { name: "Resume live" })).toHaveAttribute("aria-pressed", "true");
  const shared = lanes.first().locator("li.block:not(.block-partial)");
  await expect(shared.first()).toBeVisible();
  const target = shared.nth(Math.floor((await shared.count()) / 2));
  const gtid = await target.getAttribute("data-gtid");
  expect(gtid).toMatch(/^\d+-\d+-\d+$/);
  await target.hover();

  for (const lane of await lanes.all()) {
    const highlighted = lane.locator('li[data-highlighted="true"]');
    await expect(highlighted).toHaveCount(1);
    await expect(highlighted).toHaveAttribute("data-gtid", gtid!);
    await expect(highlighted).toHaveText(`${gtid!.split("-")[0]}-${gtid!.split("-")[2]}`); // labelled domain-seq
  }
  await expect(page.getByText(new RegExp(`^GTID ${gtid}: node\\d #\\d+, node\\d #\\d+, node\\d #\\d+$`))).toBeVisible();
  await picture("interleavings");

  // By keyboard: Tab reaches the first lane, the arrow keys move along it, the highlight follows the focus.
  await page.getByRole("heading", { level: 1 }).hover();
  await expect(page.locator('li[data-highlighted="true"]')).toHaveCount(0);
  await page.getByRole("button", { name: "Resume live" }).focus();
  await page.keyboard.press("Tab");
  const blocks = lanes.first().locator("li.block");
  const first = await blocks.nth(0).getAttribute("data-gtid");
  const second = await blocks.nth(1).getAttribute("data-gtid");
  await expect(blocks.nth(0)).toBeFocused();
  await expect(blocks.nth(0)).toHaveAttribute("data-highlighted", "true");
  await expect(page.getByText(new RegExp(`^GTID ${first}: `))).toBeVisible();
  await page.keyboard.press("ArrowRight");
  await expect(blocks.nth(1)).toBeFocused();
  await expect(page.getByText(new RegExp(`^GTID ${second}: `))).toBeVisible();
  await page.keyboard.press("End");
  await expect(blocks.last()).toBeFocused();
});

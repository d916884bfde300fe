// Stream interleavings: one lane per server, blocks coloured by domain and labelled domain-seq; hovering a
// transaction (or reaching it by keyboard: Tab, then the arrow keys) highlights the same GTID in every lane (seed
// 000's figure: each domain's order kept, the interleaving free to differ). The lanes are aligned by GTID (a GTID
// sits at the same x in every lane), the newest is in view on load and after each refresh, the lanes hold still while
// a transaction is hovered (said as paused) and move on once the pointer leaves, and a lane without a GTID says
// whether it will never receive it (seed000's other master) or not yet (the delayed replica). On seed000 the window
// is the last seconds of writes: the delayed replica's lane says how many transactions it is behind and that it has
// nothing to compare, and a GTID range typed in the Window control lists exactly that range.
import type { Locator, Page } from "@playwright/test";
import { mariadbCluster } from "../mariadb";
import { expect, openClusterTab, test } from "../fixtures";

test.use({ role: "viewer" });

/** The widest spread, in pixels, of one GTID's blocks' left edges across the lanes (measured at one instant), and
 * how many GTIDs more than one lane holds. */
async function alignmentSpread(page: Page): Promise<{ spread: number; shared: number }> {
  return page.evaluate(() => {
    const xs = new Map<string, number[]>();
    for (const block of Array.from(document.querySelectorAll(".lane li.block"))) {
      const gtid = block.getAttribute("data-gtid")!;
      xs.set(gtid, [...(xs.get(gtid) ?? []), block.getBoundingClientRect().x]);
    }
    const shared = [...xs.values()].filter((list) => list.length > 1);
    return { spread: Math.max(0, ...shared.map((list) => Math.max(...list) - Math.min(...list))), shared: shared.length };
  });
}

/** The block of the newest column (the rightmost GTID any lane holds) and its GTID. */
async function newest(page: Page): Promise<{ block: Locator; gtid: string }> {
  const gtid = await page.evaluate(() => {
    let best: Element | null = null;
    for (const block of Array.from(document.querySelectorAll(".lane li.block")))
      if (!best || Number(block.getAttribute("data-column")) > Number(best.getAttribute("data-column"))) best = block;
    return best?.getAttribute("data-gtid") ?? "";
  });
  return { block: page.locator(`.lane li.block[data-gtid="${gtid}"]`).first(), gtid };
}

test("lanes show several domains; hovering or moving by keyboard highlights one GTID in every lane", async ({ page, stack, picture }) => {
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


test("lanes are aligned by GTID, the newest stays in view as it refreshes, and the lanes hold still under a hover", async ({ page, stack }) => {
  await openClusterTab(page, stack, "interleavings", "?window=n200");
  const lanes = page.getByRole("group", { name: /^Binlog of / });
  await expect(lanes).toHaveCount(3);
  await expect.poll(async () => (await alignmentSpread(page)).shared, { timeout: 60_000 }).toBeGreaterThan(10);

  // Aligned: the same GTID at the same x in every lane that holds it (live, and again once paused).
  expect((await alignmentSpread(page)).spread).toBeLessThanOrEqual(2);

  // The newest in view on load, and again after a refresh has brought newer transactions.
  const first = await newest(page);
  await expect(first.block).toBeInViewport();
  await expect.poll(async () => (await newest(page)).gtid, { timeout: 60_000, message: "a refresh brings newer transactions" }).not.toBe(first.gtid);
  await expect((await newest(page)).block).toBeInViewport();
  expect((await alignmentSpread(page)).spread).toBeLessThanOrEqual(2);

  // Hover a recent transaction every server holds: while the pointer is on it the live refresh moves nothing, and the
  // view says it is paused (and, once a refresh answered, that a newer answer waits).
  const shared = lanes.first().locator("li.block:not(.block-partial)");
  const box = (await shared.nth((await shared.count()) - 3).boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const highlighted = page.locator('li.block[data-highlighted="true"]');
  await expect(highlighted.first()).toBeVisible();
  const gtid = (await highlighted.first().getAttribute("data-gtid"))!;
  const holders = page.locator(`li.block[data-gtid="${gtid}"]`);
  const paused = page.getByTestId("hover-paused");
  await expect(paused).toContainText("Paused while the pointer is on a transaction");
  const xBefore = (await holders.first().boundingBox())!.x;
  const before = (await newest(page)).gtid;
  await expect(paused).toContainText("a newer answer is waiting", { timeout: 60_000 });
  expect((await newest(page)).gtid).toBe(before);
  expect((await holders.first().boundingBox())!.x).toBe(xBefore);
  expect(await highlighted.count()).toBe(await holders.count());
  await expect(page.getByText(new RegExp(`^GTID ${gtid}: `))).toBeVisible();

  // The pointer leaves the lanes: live again, the newer transactions shown at once.
  await page.getByRole("heading", { level: 1 }).hover();
  await expect(paused).toHaveCount(0);
  await expect.poll(async () => (await newest(page)).gtid, { timeout: 60_000 }).not.toBe(before);

  await page.getByRole("button", { name: "Pause" }).click();
  expect((await alignmentSpread(page)).spread).toBeLessThanOrEqual(2);
});

test("seed000: a lane without a GTID says never (the other master) or not yet (the delayed replica)", async ({ page, stack }) => {
  const seed = mariadbCluster(stack, "seed000");
  const [m1, m2, delayed] = [seed.server(1).address, seed.server(2).address, seed.server(4).address];
  await page.goto(`/clusters/${seed.id}/interleavings`);
  const lane = (name: string) => page.getByRole("group", { name: `Binlog of ${name}`, exact: true });
  await expect(page.getByRole("group", { name: /^Binlog of / })).toHaveCount(5);
  await expect.poll(async () => (await alignmentSpread(page)).shared, { timeout: 60_000 }).toBeGreaterThan(5);
  expect((await alignmentSpread(page)).spread).toBeLessThanOrEqual(2);

  // Master 2's newest transaction: master 1 will never have it (it is not downstream of master 2); the delayed replica,
  // 30 s behind, has not got it yet.
  await page.getByRole("button", { name: "Pause" }).click();
  const block = lane(m2).locator("li.block").last();
  const gtid = (await block.getAttribute("data-gtid"))!;
  expect(gtid).toMatch(/^2-2-\d+$/);
  await block.hover();
  const never = lane(m1).locator(`[data-absent-for="${gtid}"]`);
  await expect(never).toHaveAttribute("data-absent", "never");
  await expect(never).toHaveText("never");
  await expect(never).toHaveAttribute("title", /not downstream of/);
  await expect(lane(delayed).locator(`[data-absent-for="${gtid}"]`)).toHaveAttribute("data-absent", "not-yet");
  const x = async (of: Locator) => (await of.boundingBox())!.x;
  expect(Math.abs((await x(never)) - (await x(block)))).toBeLessThanOrEqual(2);
  await expect(page.getByText(new RegExp(`^GTID ${gtid}: .*${m1.replace(/[.]/g, "\\.")} never`))).toBeVisible();

  // The last 10 s (the default window): the replica 30 s behind has nothing in it; its lane says by how many
  // transactions it is short of the newest end, and that it shares nothing to compare with the first lane.
  await expect(page.getByTestId("window")).toContainText("The last 10 s of writes: domain 1 seq ");
  const behind = lane(delayed).getByTestId("behind");
  await expect(behind).toHaveText(/^\d+ transactions? behind ←$/);
  expect(Number(await behind.getAttribute("data-behind"))).toBeGreaterThan(0);
  await expect(lane(delayed).getByTestId("no-overlap")).toHaveText(/^no overlap to compare with /);
  await expect(lane(delayed).getByText(/same interleaving/)).toHaveCount(0);

  // A GTID range of master 2's domain, typed: exactly those six transactions, in every lane that has them.
  const seq = Number(gtid.split("-")[2]);
  await page.getByRole("combobox", { name: "Window" }).selectOption("gtid");
  const range = () => page.getByRole("form", { name: "GTID range" });
  await range().getByRole("textbox", { name: "From" }).fill(`2-2-${seq - 5}`);
  await range().getByRole("textbox", { name: "To" }).fill(gtid);
  await range().getByRole("button", { name: "Show range" }).click();
  const labels = Array.from({ length: 6 }, (_, i) => `2-${seq - 5 + i}`);
  await expect(lane(m2).locator("li.block")).toHaveText(labels);
  await expect(lane(m1).locator("li.block")).toHaveCount(0);
  await expect(page.getByTestId("window")).toContainText(`The GTID range: domain 2 seq ${seq - 5}–${seq}`);
});

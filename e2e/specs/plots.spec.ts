// The history plots over a real switchover and a real drill, both started through the API (test data is made
// there, not by clicking): the switchover's write-unavailability window and the drill's RTO drawn with their pass
// marks; lag over a picked range, zoomed by dragging (the range kept in the URL); the collector's cycles; the
// position matrix coloured by who is behind; a GTID picked in the interleavings and found on every server.
import { expect, masterName, openClusterTab, test } from "../fixtures";
import { drill, switchover } from "../runs";

test.use({ role: "viewer" });

test("the history plots draw a real switchover and a real drill; lag zooms; a picked GTID is found on every server", async ({ page, stack, api, client }) => {
  await masterName(api, stack); // the topology shows one master before anything is switched
  const { id: operationId } = await switchover(client, stack.cluster_id);
  await masterName(api, stack);
  const { id: runId } = await drill(client, stack.cluster_id);

  // Switchover and failover history: the switchover's window, marked succeeded.
  await openClusterTab(page, stack, "operations");
  const windows = page.getByRole("figure", { name: "Write unavailability per operation" });
  await expect(windows).toContainText(/\d+ operations: \d+ succeeded, \d+ failed; longest \d/);
  const opMark = windows.getByRole("img", { name: new RegExp(`^#${operationId} switchover succeeded at .*: \\d`) });
  await expect(opMark).toHaveCount(1);
  await expect(opMark).toHaveAttribute("data-state", "succeeded");
  await expect(opMark.locator("circle")).toBeVisible();

  // Drill history: the drill's RTO, marked passed.
  await page.getByRole("link", { name: "Drills" }).click();
  const rto = page.getByRole("figure", { name: "RTO over time" });
  await expect(rto).toContainText(/\d+ drills?: \d+ passed/); // "1 drill" when this spec runs alone
  const drillMark = rto.getByRole("img", { name: new RegExp(`^drill #${runId} passed at .*: RTO \\d`) });
  await expect(drillMark).toHaveCount(1);
  await expect(drillMark).toHaveClass(/outcome-passed/);
  await expect(drillMark.locator("circle")).toBeVisible();

  // Lag: 15 minutes by default, then an hour, then a zoom dragged across the chart, each kept in the URL.
  await page.getByRole("link", { name: "Lag" }).click();
  await expect(page.getByRole("radio", { name: "15 min" })).toBeChecked();
  // A click (not check(): the URL changes in a transition, so the radio is checked a moment later).
  await page.getByRole("radio", { name: "1 hour" }).click();
  await expect(page).toHaveURL(/[?&]range=1h/);
  await expect(page.getByRole("radio", { name: "1 hour" })).toBeChecked();
  const seconds = page.getByRole("figure", { name: "Lag in seconds" });
  await expect.poll(async () => Number(await seconds.getAttribute("data-points"))).toBeGreaterThan(0);
  // Back to 15 minutes, then drag from 60 % of the way to past the right edge: the last 6 minutes, which hold the
  // samples of the switchover and the drill.
  await page.getByRole("radio", { name: "15 min" }).click();
  await expect(page).not.toHaveURL(/[?&]range=/);
  await expect(page.getByRole("radio", { name: "15 min" })).toBeChecked();
  const grid = seconds.locator(".recharts-cartesian-grid");
  const box = (await grid.boundingBox())!;
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + box.width * 0.6, y);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.8, y, { steps: 5 });
  await page.mouse.move(box.x + box.width + 8, y, { steps: 5 });
  await page.mouse.up();
  await expect(page).toHaveURL(/[?&]range=custom&from=[^&]+&to=/);
  const url = new URL(page.url());
  const zoomedMs = Date.parse(url.searchParams.get("to")!) - Date.parse(url.searchParams.get("from")!);
  expect(zoomedMs).toBeGreaterThan(5 * 60_000);
  expect(zoomedMs).toBeLessThan(7 * 60_000);
  await expect(page.getByRole("radio", { name: "custom" })).toBeChecked();
  await expect(page.getByText("a fixed range: not live")).toBeVisible();
  await expect.poll(async () => Number(await seconds.getAttribute("data-points"))).toBeGreaterThan(0);
  await expect(seconds.locator(".recharts-line path.recharts-curve").first()).toHaveAttribute("d", /^M[\d.,-]+L/);
  // The zoom survives a reload: it is in the URL.
  await page.reload();
  await expect(page.getByRole("radio", { name: "custom" })).toBeChecked();

  // Positions: every domain has a most advanced server, starred, and the cells carry how far behind they are.
  await page.getByRole("link", { name: "Positions" }).click();
  const matrix = page.getByRole("table", { name: "Positions: servers by domains" });
  await expect(matrix.getByRole("columnheader", { name: /^Domain \d+$/ }).first()).toBeVisible();
  const domainCount = await matrix.getByRole("columnheader", { name: /^Domain \d+$/ }).count();
  expect(domainCount).toBeGreaterThan(0);
  await expect.poll(() => matrix.locator("td.behind-ahead").count()).toBeGreaterThanOrEqual(domainCount);
  await expect(matrix.locator("td.behind-ahead").first()).toContainText("★ most advanced");

  // Interleavings: the oldest transaction shown in the master's lane, typed in, is found (or said to be not there yet) in
  // every lane.
  const master = await masterName(api, stack);
  await page.getByRole("link", { name: "Stream interleavings" }).click();
  await page.getByRole("button", { name: "Pause" }).click();
  const masterLane = page.getByRole("group", { name: `Binlog of ${master}` });
  const gtid = (await masterLane.locator("li[data-gtid]").first().getAttribute("data-gtid"))!;
  await page.getByRole("textbox", { name: "GTID" }).fill(gtid);
  await page.getByRole("button", { name: "Find on every server" }).click();
  await expect(page).toHaveURL(new RegExp(`[?&]gtid=${gtid}`));
  await expect(masterLane.getByTestId("picked-place")).toHaveText(new RegExp(`^${gtid}: #1 of \\d+$`));
  await expect(masterLane.locator(`li[data-picked="true"]`)).toHaveAttribute("data-gtid", gtid);
  const lanes = page.getByRole("group", { name: /^Binlog of / });
  expect(await lanes.count()).toBe(stack.nodes.length);
  for (const lane of await lanes.all()) {
    await expect(lane.getByTestId("picked-place")).toHaveText(new RegExp(`^${gtid}: (#\\d+ of \\d+|not here yet|not among .*)$`));
  }

  // Collector health: this instance's cycles, one point each.
  await page.getByRole("link", { name: "Collector health" }).click();
  const cycles = page.getByRole("figure", { name: "Collector cycles" });
  await expect.poll(async () => Number(await cycles.getAttribute("data-points"))).toBeGreaterThan(1);
  await expect(cycles).toContainText(/\d+ cycles: median \d/);
  await expect(cycles.locator(".recharts-line path.recharts-curve")).toHaveAttribute("d", /^M[\d.,-]+L/);
});

// What `make up` shows beside the ferryd cluster, read from the rendered page: the two-master shape on MariaDB
// (scripts/stack.sh; the end-to-end suite starts it as `make up` does, server 4 delayed by FERRY_MARIADB_DELAY_S).
// The multi-source replica's lane interleaves domains 1 and 2 while each master's holds its own domain, and each
// master's lane says that its interleaving differs from the replica's; the delayed replica's line in the lag chart
// rises seconds above the chart's 0 s line (read against the seconds axis' own ticks) and moves while live; the
// parallel-applying replica's domain-1 line climbs by seconds too (a demo report holds that domain's table there).
import type { Locator } from "@playwright/test";
import { mariadbCluster } from "../mariadb";
import { expect, test } from "../fixtures";

test.use({ role: "viewer" });

const domainsOf = (labels: string[]) => [...new Set(labels.map((l) => /domain (\d+)/.exec(l)?.[1]).filter(Boolean))].sort();

/** Seconds from the dashboard's formatLagSeconds text ("0 s", "750 ms", "4.5 s", "25 s", "1 min 05 s"). */
function seconds(text: string): number | null {
  const t = text.trim();
  let m = /^(\d+(?:\.\d+)?) ms$/.exec(t);
  if (m) return Number(m[1]) / 1000;
  m = /^(\d+(?:\.\d+)?) s$/.exec(t);
  if (m) return Number(m[1]);
  m = /^(\d+) min (\d+) s$/.exec(t);
  if (m) return Number(m[1]) * 60 + Number(m[2]);
  return null;
}

/** The most lag a chart's line reaches, in seconds, read off the drawn path against the seconds axis' ticks. */
async function peakSeconds(chart: Locator, seriesLabel: string): Promise<number | null> {
  const color = await chart.locator(`svg[aria-label="${seriesLabel} legend icon"] path`).getAttribute("stroke");
  const d = await chart.locator(`.recharts-line path.recharts-curve[stroke="${color}"]`).getAttribute("d");
  const ticks = await chart
    .locator(".recharts-yAxis-tick-labels .recharts-cartesian-axis-tick-value")
    .evaluateAll((texts) => texts.map((t) => ({ text: t.textContent ?? "", y: Number(t.getAttribute("y")) })));
  const axis = ticks.map((t) => ({ value: seconds(t.text), y: t.y })).filter((t): t is { value: number; y: number } => t.value !== null);
  if (!d || axis.length < 2) return null;
  const zero = axis.find((t) => t.value === 0);
  const top = axis.reduce((a, b) => (b.value > a.value ? b : a));
  if (!zero || top.value === 0) return null;
  const ys = [...d.matchAll(/(-?[\d.]+),(-?[\d.]+)/g)].map((m) => Number(m[2]));
  const highest = Math.min(...ys); // SVG y grows downwards
  return ((zero.y - highest) / (zero.y - top.y)) * top.value;
}

test("seed000: the multi-source replica interleaves unlike each master, and the delayed replica lags by seconds", async ({
  page,
  stack,
  overview,
}) => {
  const seed = mariadbCluster(stack, "seed000");
  const [m1, m2, multi, delayed, parallel] = [1, 2, 3, 4, 5].map((n) => seed.server(n).address);

  // The clusters overview lists both clusters.
  await overview.open();
  await expect(overview.link(stack.cluster_name)).toBeVisible();
  await expect(overview.link("seed000")).toBeVisible();

  // Interleavings: the multi-source replica's lane (the first: discovery started from it) holds both domains, each
  // master's lane only its own, and each master's lane says it interleaves differently from the replica's.
  await page.goto(`/clusters/${seed.id}/interleavings`);
  await expect(page.getByRole("heading", { level: 1, name: "seed000" })).toBeVisible();
  const lanes = page.getByRole("group", { name: /^Binlog of / });
  await expect(lanes).toHaveCount(5);
  await expect(lanes.first()).toHaveAttribute("aria-label", `Binlog of ${multi}`);
  const lane = (name: string) => page.getByRole("group", { name: `Binlog of ${name}`, exact: true });
  const labels = (name: string) => lane(name).locator("li.block").evaluateAll((blocks) => blocks.map((b) => b.getAttribute("aria-label") ?? ""));
  await expect.poll(async () => domainsOf(await labels(multi)), { message: "the multi-source lane holds both domains" }).toEqual(["1", "2"]);
  for (const [master, domain, other] of [[m1, "1", "2"], [m2, "2", "1"]]) {
    await expect.poll(async () => domainsOf(await labels(master))).toEqual([domain]);
    await expect(lane(master)).toContainText(`≠ interleaving differs from ${multi}: lacks transactions the first lane interleaves (domain ${other})`);
  }
  await expect(page.getByText("The servers interleave the domains differently")).toBeVisible();

  // Lag: the delayed replica's line (one per domain) rises seconds above 0 s, and moves while the page is live.
  await page.goto(`/clusters/${seed.id}/lag?range=5m`);
  const chart = page.getByRole("figure", { name: "Lag in seconds" });
  await expect(chart.getByText(`${delayed} · domain 1`)).toBeVisible();
  await expect
    .poll(() => peakSeconds(chart, `${delayed} · domain 1`), { message: "the delayed replica's lag reaches seconds", timeout: 60_000 })
    .toBeGreaterThan(3);
  const line = chart.locator(`.recharts-line path.recharts-curve[stroke="${await chart
    .locator(`svg[aria-label="${delayed} · domain 1 legend icon"] path`)
    .getAttribute("stroke")}"]`);
  const before = await line.getAttribute("d");
  await expect.poll(() => line.getAttribute("d"), { message: "the delayed replica's line moves" }).not.toBe(before);

  // The parallel replica: domain 1 waits for the report's lock (seconds), while domain 2 has its own line.
  await expect(chart.getByText(`${parallel} · domain 2`)).toBeVisible();
  await expect
    .poll(() => peakSeconds(chart, `${parallel} · domain 1`), { message: "the parallel replica's domain-1 lag reaches seconds", timeout: 60_000 })
    .toBeGreaterThan(2);
});

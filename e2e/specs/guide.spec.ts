// The tour of docs/operator-guide.md, page by page, checking what the guide says each picture shows; with
// FERRY_E2E_SCREENSHOTS=1 it writes the guide's pictures (docs/screenshots/guide-*.png). scripts/screenshots.sh runs it
// against the `make up` stack, so the pictures show what `make up` starts: the ferryd cluster and seed000 on MariaDB.
// The histories need data: a drill (rotation, switched back) and a switchover are run through the API when the
// ferryd cluster has had none yet. The switchover dialog itself is only previewed (a dry run).
import { mariadbCluster } from "../mariadb";
import { expect, masterName, openClusterTab, test } from "../fixtures";

interface Run {
  id: number;
  state: string;
}

test("the operator's guide tour: overview, seed000's topology, positions, interleavings and lag, a switchover preview, drills, operations, and a phone's view", async ({
  page,
  signIn,
  stack,
  api,
  picture,
}) => {
  test.setTimeout(300_000);
  const seed = mariadbCluster(stack, "seed000");
  const [multi, delayed] = [seed.server(3).address, seed.server(4).address];

  // A drill for the histories, unless the ferryd cluster has had one.
  const runs = (await (await api.get(`/api/v1/clusters/${stack.cluster_id}/drills/runs`)).json()) as Run[] | { items: Run[] };
  if ((Array.isArray(runs) ? runs : runs.items).length === 0) {
    await masterName(api, stack);
    const response = await api.post(`/api/v1/clusters/${stack.cluster_id}/drills/runs`, {
      data: { candidate_strategy: "rotation", switch_back: true },
    });
    expect(response.status(), await response.text()).toBe(202);
    const { id } = (await response.json()) as Run;
    await expect
      .poll(async () => ((await (await api.get(`/api/v1/clusters/${stack.cluster_id}/drills/runs/${id}`)).json()) as Run).state, {
        timeout: 150_000,
      })
      .toBe("passed");
  }

  // A real switchover for the operations history, unless the ferryd cluster has had one (a drill's do not count).
  const operations = (await (await api.get(`/api/v1/clusters/${stack.cluster_id}/operations`)).json()) as (Run & { type: string; dry_run: boolean })[];
  if (!operations.some((o) => o.type === "switchover" && !o.dry_run && o.state === "succeeded")) {
    await masterName(api, stack);
    const response = await api.post(`/api/v1/clusters/${stack.cluster_id}/operations/switchover`, { data: { dry_run: false } });
    expect(response.status(), await response.text()).toBe(202);
    const { id } = (await response.json()) as Run;
    await expect
      .poll(async () => ((await (await api.get(`/api/v1/clusters/${stack.cluster_id}/operations/${id}`)).json()) as Run).state, {
        timeout: 120_000,
      })
      .toBe("succeeded");
    await masterName(api, stack);
  }

  await signIn("operator");

  // Overview: both clusters, each with its master and health.
  await expect(page.getByRole("heading", { level: 1, name: "Clusters" })).toBeVisible();
  await expect(page.getByRole("link", { name: stack.cluster_name, exact: true })).toBeVisible();
  await expect(page.getByRole("link", { name: "seed000", exact: true })).toBeVisible();
  await picture("guide-overview");

  // Topology of seed000: two masters, the multi-source replica's connections m1 and m2, the delayed replica seconds behind.
  await page.goto(`/clusters/${seed.id}/topology`);
  await expect(page.getByRole("heading", { level: 1, name: "seed000" })).toBeVisible();
  const connections = page.getByRole("table", { name: "Replication connections" });
  await expect(connections.getByRole("row").filter({ hasText: /replicating|delayed/ })).toHaveCount(4);
  await expect(connections.getByRole("row").filter({ has: page.getByRole("rowheader", { name: delayed, exact: true }) })).toContainText(/domain 1: [1-9][\d.]* s/);
  await expect(page.getByRole("table", { name: "Servers" }).getByRole("row").filter({ hasText: "★ master" })).toHaveCount(2);
  await picture("guide-topology");

  // Positions: servers × domains, the delayed replica behind in both.
  await page.getByRole("link", { name: "Positions" }).click();
  const matrix = page.getByRole("table", { name: "Positions: servers by domains" });
  await expect.poll(() => matrix.getByRole("columnheader").allTextContents()).toEqual(expect.arrayContaining(["Domain 1", "Domain 2"]));
  await picture("guide-positions");

  // Interleavings, paused: the multi-source replica's lane first, each master's differing from it.
  await page.getByRole("link", { name: "Stream interleavings" }).click();
  const lane = (name: string) => page.getByRole("group", { name: `Binlog of ${name}`, exact: true });
  await expect(page.getByRole("group", { name: /^Binlog of / })).toHaveCount(5);
  await expect(lane(seed.server(1).address)).toContainText(`≠ interleaving differs from ${multi}`);
  await page.getByRole("button", { name: "Pause" }).click();
  await picture("guide-interleavings");

  // Lag over 5 minutes: the delayed replica's lines seconds above the rest.
  await page.goto(`/clusters/${seed.id}/lag?range=5m`);
  const seconds = page.getByRole("figure", { name: "Lag in seconds" });
  await expect(seconds.getByText(`${delayed} · domain 1`)).toBeVisible();
  await expect.poll(async () => Number(await seconds.getAttribute("data-points"))).toBeGreaterThan(0);
  await picture("guide-lag");

  // A switchover on the ferryd cluster, previewed: the preflight checklist, the typed confirmation still locked.
  await openClusterTab(page, stack, "operations");
  const form = page.getByRole("group", { name: "Switchover" });
  await form.getByRole("button", { name: "Preview (dry run)" }).click();
  const checks = form.getByRole("list", { name: "Preflight checks" }).getByRole("listitem");
  await expect(checks.first()).toBeVisible();
  await expect(form.getByRole("button", { name: "Switch over" })).toBeDisabled();
  await picture("guide-switchover", form);

  // Operations history: each operation's write-unavailability window, and the table.
  const windows = page.getByRole("figure", { name: "Write unavailability per operation" });
  await expect(windows).toContainText(/\d+ operations?: \d+ succeeded/);
  await expect(page.getByRole("table", { name: "Operation history" }).getByRole("row")).not.toHaveCount(1);
  await picture("guide-operations", page.getByRole("region", { name: "History" }));

  // Drill history: RTO over time with pass marks, and the runs.
  await page.getByRole("link", { name: "Drills" }).click();
  const rto = page.getByRole("figure", { name: "RTO over time" });
  await expect(rto).toContainText(/\d+ drills?: \d+ passed/);
  await expect(page.getByRole("table", { name: "Drill history" }).getByRole("row").filter({ hasText: "passed" })).not.toHaveCount(0);
  await picture("guide-drills", page.getByRole("region", { name: "History" }));

  // On a phone (390 × 844): the overview, seed000's topology and positions, each within the screen's width.
  await page.setViewportSize({ width: 390, height: 844 });
  const fitsTheScreen = async () => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await page.goto("/");
  await expect(page.getByRole("link", { name: "seed000", exact: true })).toBeVisible();
  await fitsTheScreen();
  await picture("guide-phone-overview");
  await page.goto(`/clusters/${seed.id}/topology`);
  await expect(page.getByRole("table", { name: "Servers" }).getByRole("row").filter({ hasText: "★ master" })).toHaveCount(2);
  await fitsTheScreen();
  await picture("guide-phone-topology");
  await page.goto(`/clusters/${seed.id}/positions`);
  await expect.poll(() => matrix.getByRole("columnheader").allTextContents()).toEqual(expect.arrayContaining(["Domain 1", "Domain 2"]));
  await fitsTheScreen();
  await picture("guide-phone-positions");
});

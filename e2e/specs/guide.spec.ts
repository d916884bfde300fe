// The tour of docs/operator-guide.md, page by page, checking what the guide says each picture shows; with
// FERRY_E2E_SCREENSHOTS=1 it writes the guide's pictures (docs/screenshots/guide-*.png). scripts/screenshots.sh runs it
// against the `make up` stack, so the pictures show what `make up` starts: the ferryd cluster and seed000 on MariaDB.
// The histories need data: a drill (rotation, switched back) and a switchover are run through the API when the
// ferryd cluster has had none yet. The switchover dialog itself is only previewed (a dry run).
import { mariadbCluster } from "../mariadb";
import { expect, masterName, openClusterTab, test } from "../fixtures";
import { drill, switchover } from "../runs";

test.use({ role: "operator" });

test("the operator's guide tour: overview, seed000's topology, positions, interleavings and lag, a switchover preview, drills, operations, and a phone's view", async ({
  page,
  stack,
  api,
  client,
  overview,
  topology,
  switchoverForm: form,
  picture,
}) => {
  const seed = mariadbCluster(stack, "seed000");
  // Each server by the name it is registered under: s1-s5 on the `make up` stack (scripts/name_servers.py), its address
  // on the end-to-end suite's.
  const graph = await client.get("/api/v1/clusters/{cluster_id}/topology", { path: { cluster_id: seed.id } });
  const nameOf = (serverId: number) => graph.nodes.find((n) => n.reported_server_id === serverId)!.name;
  const [multi, delayed] = [nameOf(3), nameOf(4)];

  // A drill for the histories, unless the ferryd cluster has had one.
  const runs = await client.get("/api/v1/clusters/{cluster_id}/drills/runs", { path: { cluster_id: stack.cluster_id } });
  if (runs.length === 0) {
    await masterName(api, stack);
    await drill(client, stack.cluster_id);
  }

  // A real switchover for the operations history, unless the ferryd cluster has had one (a drill's do not count).
  const operations = await client.get("/api/v1/clusters/{cluster_id}/operations", { path: { cluster_id: stack.cluster_id } });
  if (!operations.some((o) => o.type === "switchover" && !o.dry_run && o.state === "succeeded")) {
    await masterName(api, stack);
    await switchover(client, stack.cluster_id);
    await masterName(api, stack);
  }

  // Overview: both clusters, each with its master and health.
  await overview.open();
  await expect(overview.link(stack.cluster_name)).toBeVisible();
  await expect(overview.link("seed000")).toBeVisible();
  await picture("guide-overview");

  // Topology of seed000: two masters, the multi-source replica's connections m1 and m2, the delayed replica seconds behind.
  await topology.open(seed.id, "seed000");
  await expect(topology.connections.getByRole("row").filter({ hasText: /replicating|delayed/ })).toHaveCount(4);
  await expect(topology.connectionsOf(delayed)).toContainText(/domain 1: [1-9][\d.]* s/);
  await expect(topology.servers.getByRole("row").filter({ hasText: "★ master" })).toHaveCount(2);
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
  await expect(lane(nameOf(1))).toContainText(`≠ interleaving differs from ${multi}`);
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
  await form.preview();
  await expect(form.checks.first()).toBeVisible();
  await expect(form.run).toBeDisabled();
  await picture("guide-switchover", form.form);

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
  await overview.open();
  await expect(overview.link("seed000")).toBeVisible();
  await fitsTheScreen();
  await picture("guide-phone-overview");
  await topology.open(seed.id);
  await expect(topology.servers.getByRole("row").filter({ hasText: "★ master" })).toHaveCount(2);
  await fitsTheScreen();
  await picture("guide-phone-topology");
  await page.goto(`/clusters/${seed.id}/positions`);
  await expect.poll(() => matrix.getByRole("columnheader").allTextContents()).toEqual(expect.arrayContaining(["Domain 1", "Domain 2"]));
  await fitsTheScreen();
  await picture("guide-phone-positions");
});

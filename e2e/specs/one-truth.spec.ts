// One truth per number, on seed000 (server 4 delayed 30 s on purpose): one moment of the real stack — the overview,
// the topology, the positions and the lag history read from the API back to back while the collector is held still
// (the worker stopped by its pid, SIGSTOP, and let go once they are read: however long the reads take on a busy
// machine, no collector cycle comes between them; the topology read before and after is checked to be the same) — is
// given to the dashboard, and the overview, the topology's connections, the positions matrix and the lag chart say
// the same figure in the same words: the delayed replica's "… (delay 30 s, +… s) · … txn" everywhere, the overview's
// worst lag that of the connection it names, and the chart's band at the configured delay.
import type { Page } from "@playwright/test";
import type { Answer, Schemas, TypedApi } from "../api";
import { mariadbCluster } from "../mariadb";
import { whileSignalled, type Stack } from "../stack";
import { expect, test } from "../fixtures";

test.use({ role: "viewer" });

interface Moment {
  overview: Answer<"/api/v1/clusters/overview", "get">;
  topology: Schemas["TopologyGraph"];
  positions: Schemas["PositionMatrix"];
  history: Schemas["LagHistory"];
}

/** What `read` returns, read while the stack's collector is held still: its worker process stopped (SIGSTOP, by the
 * pid the stack wrote) and let go (SIGCONT) once `read` ends, however it ends. */
function collectorHeld<T>(stack: Stack, read: () => Promise<T>): Promise<T> {
  return whileSignalled(stack.worker_pid_file, "worker", ["SIGSTOP", "SIGCONT"], read);
}

/** One moment of the stack's stored state, read back to back; none when anything recorded between the reads. */
async function moment(client: TypedApi, cluster: number): Promise<Moment | null> {
  const path = { cluster_id: cluster };
  const before = await client.get("/api/v1/clusters/{cluster_id}/topology", { path });
  const overview = await client.get("/api/v1/clusters/overview");
  const positions = await client.get("/api/v1/clusters/{cluster_id}/positions", { path });
  const until = new Date();
  const since = new Date(until.getTime() - 15 * 60_000);
  const history = await client.get("/api/v1/clusters/{cluster_id}/lag/history", {
    path,
    query: { since: since.toISOString(), until: until.toISOString(), limit: 10000 },
  });
  const after = await client.get("/api/v1/clusters/{cluster_id}/topology", { path });
  return JSON.stringify(after) === JSON.stringify(before) ? { overview, topology: after, positions, history } : null;
}

/** Serves the moment to the page instead of the live API for those four reads (the rest stays live). */
async function freeze(page: Page, cluster: number, at: Moment): Promise<void> {
  const serve = (body: unknown) => ({ status: 200, contentType: "application/json", body: JSON.stringify(body) });
  const path = (rest: string) => new RegExp(`/api/v1/clusters/${rest}(\\?.*)?$`);
  await page.route(path("overview"), (route) => route.fulfill(serve(at.overview)));
  await page.route(path(`${cluster}/topology`), (route) => route.fulfill(serve(at.topology)));
  await page.route(path(`${cluster}/positions`), (route) => route.fulfill(serve(at.positions)));
  await page.route(path(`${cluster}/lag/history`), (route) => route.fulfill(serve(at.history)));
  // The event stream would refetch: not while the moment is read.
  await page.route(path(`${cluster}/events`), (route) => route.abort());
}

test("overview, topology, positions and lag chart agree at one moment, the delayed replica included", async ({
  page, client, stack, overview, topology,
}) => {
  const seed = mariadbCluster(stack, "seed000");
  const delayedPort = String(seed.server(4).port);
  let at: Moment | null = null;
  await expect
    .poll(async () => {
      at = await collectorHeld(stack, () => moment(client, seed.id));
      const delayed = at?.topology.edges.find((e) => e.source === "replica" && e.lag["1"]?.delay_s === 30);
      return delayed !== undefined;
    }, { timeout: 60_000, message: "one moment of seed000 with the delayed replica's lag, the same topology before and after the reads" })
    .toBe(true);
  const frozen = (at as Moment | null)!; // set by the poll above
  const names = new Map(frozen.topology.nodes.map((n) => [n.registered_server_id, n.name]));
  const delayed = frozen.topology.edges.find((e) => e.source === "replica" && e.lag["1"]?.delay_s === 30)!;
  const delayedName = names.get(delayed.replica_registered_server_id)!;
  expect(delayedName).toContain(delayedPort);
  const truth = delayed.lag["1"]!;
  expect(truth.words).toMatch(/^\d[\d.]* m?s \(delay 30 s, \+[\d.]+ m?s\) · [\d,]+ txn$/);

  await freeze(page, seed.id, frozen);

  // The overview: the worst lag is one connection's figure in its words, and the topology says the same of it.
  const worst = frozen.overview.find((c) => c.id === seed.id)!.worst_lag!;
  await overview.open();
  await expect(overview.worstLag("seed000")).toContainText(worst.words);
  await expect(overview.worstLag("seed000")).toContainText(`${worst.replica}`);

  // The topology: each connection's lag per domain in the API's words; the delayed replica's is the truth.
  await topology.open(seed.id, seed.name);
  await expect(topology.connectionsOf(new RegExp(delayedPort))).toContainText(`domain 1: ${truth.words}`);
  await expect(topology.connections).toContainText(`domain ${worst.domain}: ${worst.words}`);

  // The positions: the delayed replica's cell in domain 1 says the same.
  await page.getByRole("link", { name: "Positions" }).click();
  const matrix = page.getByRole("table", { name: "Positions: servers by domains" });
  const positionsRow = matrix.getByRole("row").filter({ has: page.getByRole("rowheader", { name: new RegExp(delayedPort) }) });
  await expect(positionsRow.locator("[data-behind]").first()).toContainText(`lag ${truth.words}`);

  // The lag chart: the configured delay drawn as a band for that replica, and its series there.
  await page.goto(`/clusters/${seed.id}/lag?live=paused`);
  const seconds = page.getByRole("figure", { name: "Lag in seconds" });
  await expect(seconds).toContainText(new RegExp(`delay 30 s: [^;]*${delayedPort}`));
  await expect(seconds.locator(".delay-band")).toHaveCount(1);
  // After a hub move (another spec) the delayed replica has a series per master it followed: one at least is drawn.
  await expect(seconds.getByRole("button", { name: new RegExp(`${delayedPort}.* · domain 1`) }).first()).toBeVisible();
});

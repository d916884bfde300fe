// Health by meaning on seed000 (scripts/stack.sh as `make up` starts it): two masters, each the origin of its own
// domain, and server 4 delayed 30 s on purpose are a shape, not a fault — the overview says healthy and its worst lag
// never counts the delay as lag (server 4's is written with its delay beside it); meanwhile the demo report that holds domain 1's table on server 5 for 8 s of every 20 s leaves
// server 5's workers waiting: the overview flags it beside the healthy cluster and the topology says "stalled in
// domain 1" with MariaDB's own words for the wait; the delayed replica's connection shows its configured delay.
import { mariadbCluster } from "../mariadb";
import { expect, test } from "../fixtures";

test.use({ role: "viewer" });

test("seed000 overview not degraded while s5 stuck under the lock is flagged", async ({ stack, overview, topology }) => {
  const seed = mariadbCluster(stack, "seed000");
  const parallelPort = String(seed.server(5).port);
  const delayedPort = String(seed.server(4).port);

  // The overview: seed000 healthy with its two masters, and a warning naming server 5's stall once the report holds
  // the lock long enough (it holds 8 s of every 20 s).
  await overview.open();
  const health = overview.health("seed000");
  await expect(health).toContainText("healthy");
  await expect(health).not.toContainText("degraded");
  await expect(health.getByText(/stalled in domain 1: \d+ transactions waiting/)).toBeVisible({ timeout: 60_000 });
  await expect(health.getByText(/stalled in domain 1/)).toContainText(parallelPort);
  await expect(health).toContainText("healthy");
  // The worst lag is judged against each connection's configured delay: server 4's 30 s is written with its delay
  // beside it, never as lag of its own.
  const worst = overview.worstLag("seed000");
  await expect(worst).toHaveText(/^[●△▲] (\d[\d.]* m?s \(delay 30 s, \+[\d.]+ m?s\)|[^(]+) · [\d,]+ txn/);
  await expect(worst).not.toHaveText(/^[●△▲] [23]\d s · /);

  // The topology: server 5's connection stalled in domain 1 with the workers' wait in MariaDB's words, server 4's
  // connection a delayed replica by its setting, with the delay in its settings line.
  await topology.open(seed.id, seed.name);
  const stalled = topology.connections.getByRole("row").filter({ hasText: "stalled in domain 1" });
  await expect(stalled).toHaveCount(1, { timeout: 60_000 });
  await expect(stalled.getByRole("rowheader")).toContainText(parallelPort);
  await expect(stalled).toContainText(/workers?: Waiting for table (metadata )?lock/);
  await expect(stalled).toContainText(/optimistic|conservative|aggressive/);
  const delayed = topology.connectionsOf(new RegExp(delayedPort));
  await expect(delayed).toContainText("delayed replica (30 s)");
  await expect(delayed).toContainText("delay 30 s");
  await expect(topology.servers.getByText("binlog format ROW")).toHaveCount(5);
});

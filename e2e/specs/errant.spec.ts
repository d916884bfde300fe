// Errant transactions named in the dashboard: seed000's server 5 (a leaf replica of the multi-source server 3; no
// server replicates from it and no other spec needs its binlog's past) is given writes of its own in two domains no
// server of seed000 has — as a client on a replica would — and the overview, the topology's banner and the server's
// page name them as a standing problem: per domain how many, the first and the last GTID. Afterwards the writes are
// taken back on server 5 alone (its table dropped without binlogging, its older binlog files purged and the two
// domains deleted from its GTID state), so its history is the cluster's again and the problem goes: the cluster is
// as healthy as it was for the specs that follow. The domains are ones nothing writes, so replication never stops.
import { mariadbCluster, type MariadbCluster } from "../mariadb";
import { expect, test } from "../fixtures";

test.use({ role: "viewer" });

/** The GTID domains anything on the cluster's servers holds (binlog states and replicated positions). */
function domainsInUse(seed: MariadbCluster): Set<number> {
  const used = new Set<number>();
  for (const { number } of seed.servers) {
    for (const cell of seed.sql(number, "SELECT @@gtid_binlog_state, @@gtid_slave_pos")[0] ?? []) {
      for (const gtid of cell.split(",").filter((g) => /^\d+-\d+-\d+$/.test(g.trim()))) used.add(Number(gtid.trim().split("-")[0]));
    }
  }
  return used;
}

test("a replica's own writes in two domains are named with their counts and GTIDs, and go once taken back", async ({ page, stack, client, overview, topology, serverPage }) => {
  const seed = mariadbCluster(stack, "seed000");
  const leaf = seed.server(5);
  // Its own default domain first (what a client writing with the server's defaults gets), then the next free one.
  const used = domainsInUse(seed);
  const own = Number(seed.sql(5, "SELECT @@gtid_domain_id")[0]![0]);
  const domains: number[] = [];
  for (let d = own; domains.length < 2; d++) if (!used.has(d)) domains.push(d);
  const [first, second] = domains as [number, number];
  const table = `app.e2e_errant_${Date.now()}`;

  const graph = await client.get("/api/v1/clusters/{cluster_id}/topology", { path: { cluster_id: seed.id } });
  const leafServerId = graph.nodes.find((n) => n.name === leaf.address)!.reported_server_id!;

  // A table only server 5 has (not binlogged), then its own transactions: 3 in the first domain, 2 in the second.
  const counts: [number, number][] = [[first, 3], [second, 2]];
  seed.sql(5, `SET SESSION sql_log_bin = 0; CREATE TABLE ${table} (id INT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(64) NOT NULL)`);
  try {
    const write = (domain: number, count: number) =>
      seed
        .sql(5, `SET SESSION gtid_domain_id = ${domain};` + ` INSERT INTO ${table} (note) VALUES ('own write'); SELECT @@last_gtid;`.repeat(count))
        .map((row) => row[0]!);
    const mine = Object.fromEntries(counts.map(([domain, count]) => [domain, write(domain, count)]));
    const named = counts.map(([domain, count]) => `${count} in domain ${domain} (${mine[domain]![0]} … ${mine[domain]!.at(-1)})`);
    const total = counts.reduce((sum, [, count]) => sum + count, 0);

    // The overview: seed000 degraded, with the problem naming the server, the total, and each domain's count and GTIDs.
    await overview.open();
    const health = overview.health("seed000");
    await expect(health).toContainText(`${leaf.address} (server_id ${leaf.number}) took ${total} writes of its own while replicating`, { timeout: 60_000 });
    for (const words of named) await expect(health).toContainText(words);
    await expect(health).toContainText("degraded");

    // The topology's banner says the same.
    await topology.open(seed.id, seed.name);
    const banner = topology.alerts;
    await expect(banner).toContainText("Errant transactions:");
    for (const words of named) await expect(banner).toContainText(words);

    // The server's page: its alert, and a row per domain with the count, the first and the last GTID.
    await serverPage.open(seed.id, leafServerId);
    const article = serverPage.article(new RegExp(`^${leaf.address.replace(/\./g, "\\.")}`));
    for (const words of named) await expect(article.alerts).toContainText(words);
    for (const [domain, count] of counts) {
      const cells = article.errant.getByRole("row").filter({ has: page.getByRole("rowheader", { name: String(domain), exact: true }) });
      await expect(cells.getByRole("cell")).toHaveText([String(count), mine[domain]![0]!, mine[domain]!.at(-1)!, /\d/]);
    }
  } finally {
    // Taken back on server 5 alone: the table dropped unlogged; a new binlog file started, the older ones purged
    // (one that crash recovery still needs is purged once the server is done with it: tried again until the new
    // file is the oldest), then the two domains deleted from its GTID state — a domain is deleted only when no
    // binlog file left holds its transactions.
    seed.sql(5, `SET SESSION sql_log_bin = 0; DROP TABLE IF EXISTS ${table}`);
    const started = seed.sql(5, "FLUSH BINARY LOGS; SHOW MASTER STATUS")[0]![0]!;
    await expect(() => {
      const oldest = seed.sql(5, `PURGE BINARY LOGS TO '${started}'; SHOW BINARY LOGS`)[0]![0];
      expect(oldest, `server 5's binlog files before ${started} purged`).toBe(started);
    }).toPass({ timeout: 60_000 });
    seed.sql(5, `FLUSH BINARY LOGS DELETE_DOMAIN_ID = (${first}, ${second})`);
    expect(seed.sql(5, "SELECT @@gtid_binlog_state")[0]![0]).not.toMatch(new RegExp(`(^|,)(${first}|${second})-`));
  }

  // The problem is gone from the API and the page: what follows finds seed000 as it was.
  await expect
    .poll(async () => {
      const listed = await client.get("/api/v1/clusters/overview");
      return listed.find((c) => c.id === seed.id)!.problems.filter((p) => p.includes("errant"));
    }, { message: "seed000's errant-transactions problem gone" })
    .toEqual([]);
  await expect(page.getByRole("article").getByText("None: it holds no transaction of its own that its masters lack.")).toBeVisible();
});

// The two-master shape on real MariaDB 10.11 (started and registered by scripts/test-e2e.sh, written to by its load
// writer): masters 1 and 2 in domains 1 and 2, server 3 a multi-source replica of both, servers 4 and 5 below it.
// The multi-source replica's positions show both domains; its binlog interleaves them while each master's holds
// its own domain only, and the interleavings view shows that (the replica's lane alternates between the domains,
// each master's lane is one domain, its transactions on 4 of the 5 servers at most). A replica stopped by a real duplicate-key error
// shows the server's code (1062) and message in the topology, and an operator skips that insert through the UI
// (its GTID named first, the loss said) and the replica replicates again. An operator registers the same servers as another
// cluster through the credentials form, and discovery from the seed finds all five.
import { mariadbCluster } from "../mariadb";
import { expect, test } from "../fixtures";

const domainsOf = (labels: string[]) => [...new Set(labels.map((l) => /domain (\d+)/.exec(l)?.[1]).filter(Boolean))].sort();

test.describe(() => {
  test.use({ role: "viewer" });

  test("the multi-source replica holds both domains, and its lane interleaves them unlike each master's", async ({ page, stack, topology }) => {
    const seed = mariadbCluster(stack, "seed000");
    const [m1, m2, multi] = [seed.server(1).address, seed.server(2).address, seed.server(3).address];

    // Each server's kind and version, as the collector read them.
    await topology.open(seed.id, "seed000");
    await expect(topology.server(multi)).toContainText(/MariaDB\s*10\.11\.\d+-MariaDB/);
    // Both of the replica's connections, one to each master.
    for (const [name, master] of [["m1", m1], ["m2", m2]]) {
      const row = topology.connectionsOf(multi).filter({ hasText: master });
      await expect(row).toContainText(name);
      await expect(row).toContainText("replicating");
    }

    // Positions: the multi-source replica has a GTID in domain 1 (from master 1) and in domain 2 (from master 2).
    await page.getByRole("link", { name: "Positions" }).click();
    const matrix = page.getByRole("table", { name: "Positions: servers by domains" });
    await expect
      .poll(() => matrix.getByRole("columnheader").allTextContents())
      .toEqual(expect.arrayContaining(["Domain 1", "Domain 2"]));
    const headers = await matrix.getByRole("columnheader").allTextContents();
    // A row is its server's name (a row header), then a cell per column after the first.
    // A row header is the server's name, then when its row was read ("read … UTC").
    const rowHeader = (name: string) => new RegExp("^" + name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + " read ");
    const cell = (name: string, domain: number) =>
      matrix.getByRole("row").filter({ has: page.getByRole("rowheader", { name: rowHeader(name) }) }).getByRole("cell").nth(headers.indexOf(`Domain ${domain}`) - 1);
    await expect(cell(multi, 1)).toContainText(/^1-1-\d+/);
    await expect(cell(multi, 2)).toContainText(/^2-2-\d+/);
    // Each master has its own domain only.
    await expect(cell(m1, 2)).toHaveText("none");
    await expect(cell(m2, 1)).toHaveText("none");

    // Interleavings: the replica's lane holds blocks of both domains, each master's of its own domain only, so the
    // order of transactions differs.
    await page.getByRole("link", { name: "Stream interleavings" }).click();
    const lane = (name: string) => page.getByRole("group", { name: `Binlog of ${name}` });
    const labels = (name: string) => lane(name).locator("li.block").evaluateAll((blocks) => blocks.map((b) => b.getAttribute("aria-label") ?? ""));
    await expect(page.getByRole("group", { name: /^Binlog of / })).toHaveCount(5);
    await expect.poll(async () => domainsOf(await labels(multi)), { message: "the multi-source lane shows both domains" }).toEqual(["1", "2"]);
    await expect.poll(async () => domainsOf(await labels(m1))).toEqual(["1"]);
    await expect.poll(async () => domainsOf(await labels(m2))).toEqual(["2"]);

    // Frozen: the replica's lane switches between the two domains again and again (the two masters' streams merged
    // as they arrived), while each master's lane is one domain; so the sequences differ, each keeping its domains in
    // order, and no master's transaction is on every server (never on the other master); those the replicas' windows
    // hold too are on 4 of 5 (3 of 5 while the delayed server 4 lacks them; a domain-1 one 2 of 5 while server 5 also
    // waits on the demo report's lock).
    await page.getByRole("button", { name: "Pause" }).click();
    const domainRuns = (labels: string[]) =>
      labels.map((l) => /domain (\d+)/.exec(l)?.[1]).filter((d, i, all) => i === 0 || d !== all[i - 1]).length;
    expect(domainRuns(await labels(multi))).toBeGreaterThan(2);
    const gtids = (name: string) => lane(name).locator("li.block").evaluateAll((blocks) => blocks.map((b) => b.getAttribute("data-gtid")));
    const multiGtids = await gtids(multi);
    for (const master of [m1, m2]) {
      expect(multiGtids).not.toEqual(await gtids(master));
      const masterLabels = await labels(master);
      // On 4 of 5, or fewer while the delayed replica (server 4) and the locked one (server 5) have not applied it yet;
      // always on the master and the multi-source replica.
      expect(masterLabels.some((l) => /, on [234] of 5 servers$/.test(l))).toBe(true);
      expect(masterLabels.every((l) => / of 5 servers$/.test(l))).toBe(true); // none is on all five
    }
    for (const name of [multi, m1, m2]) {
      await expect(lane(name)).toContainText("✓ each domain in order");
    }
  });
});

/** Whether position `have` is at or past `gtid` in its domain (positions list one GTID per domain). */
const covers = (have: string, gtid: string) => {
  const [domain, , seq] = gtid.split("-");
  const mine = have.split(",").find((g) => g.split("-")[0] === domain);
  return mine !== undefined && Number(mine.split("-")[2]) >= Number(seq);
};

test.describe(() => {
  test.use({ role: "operator" });

  test("a replica stopped by a duplicate key shows MariaDB's error code and message, and an operator skips it", async ({ page, stack, client, topology }) => {
    const seed = mariadbCluster(stack, "seed000");
    const leaf = seed.server(5).address;
    const table = `app.e2e_dup_${Date.now()}`;
    seed.sql(1, `CREATE TABLE ${table} (id INT PRIMARY KEY, note VARCHAR(64) NOT NULL)`);
    const [schema, name] = table.split(".");
    await expect
      .poll(() => seed.sql(5, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='${schema}' AND table_name='${name}'`)[0]?.[0], {
        message: "the table reached server 5",
      })
      .toBe("1");
    // A row only server 5 has (not binlogged), then the same key written on master 1: server 5's SQL thread stops.
    seed.sql(5, `SET SESSION sql_log_bin = 0; INSERT INTO ${table} VALUES (1, 'only on server 5')`);
    const failing = seed.sql(1, `INSERT INTO ${table} VALUES (1, 'from master 1'); SELECT @@last_gtid`)[0]![0]!;
    try {
      await topology.open(seed.id, seed.name);
      const row = topology.connectionsOf(leaf);
      await expect(row).toContainText("SQL error 1062");
      // Told in words first (what failed, and what to do), then the server's own code and message.
      const error = row.getByRole("cell").last();
      await expect(error).toContainText(new RegExp(`^${leaf.replace(/\./g, "\\.")} \\(server_id 5\\): a transaction from .* failed to apply on .*: their data differ`));
      await expect(error).toContainText(/ 1062: .*Duplicate entry '1' for key 'PRIMARY'/);
      await expect(topology.graph).toContainText("SQL error 1062");

      // The API says the same, with the server's own message.
      const graph = await client.get("/api/v1/clusters/{cluster_id}/topology", { path: { cluster_id: seed.id } });
      const leafId = graph.nodes.find((n) => n.name === leaf)!.registered_server_id;
      const edge = graph.edges.find((e) => e.replica_registered_server_id === leafId)!;
      expect(edge.last_error_code).toBe("1062");
      expect(edge.last_error_message).toContain(`Duplicate entry '1' for key 'PRIMARY'`);

      // The operator skips the failing insert: warned that it is lost there, shown its GTID first, then the outcome.
      await row.getByRole("button", { name: "Skip and restart…" }).click();
      const form = page.getByRole("group", { name: `Skip the failing transaction on ${leaf}` });
      await expect(form.getByRole("note")).toContainText(`The skipped transaction will be lost on ${leaf}`);
      await form.getByRole("button", { name: "Preview (dry run)" }).click();
      await expect(form).toContainText(`Would skip: ${failing}`);
      await form.getByLabel(/Type the cluster name/).fill(seed.name);
      await form.getByRole("button", { name: "Skip 1 transaction and restart" }).click();
      const outcome = form.getByLabel("Skip outcome");
      await expect(outcome).toContainText(`Skipped: ${failing}`, { timeout: 60_000 });
      await expect(outcome.getByRole("alert")).toContainText("never bring it back");
      await expect(outcome).toContainText("✓ It replicates again.");
      await expect(row).toContainText("replicating", { timeout: 60_000 });
      await expect(row).not.toContainText("SQL error 1062");
      // It replicates what follows the skipped insert.
      seed.sql(1, `INSERT INTO ${table} VALUES (2, 'after the skip')`);
      await expect
        .poll(() => seed.sql(5, `SELECT note FROM ${table} WHERE id = 2`)[0]?.[0], { message: "server 5 replicates after the skip" })
        .toBe("after the skip");
    } finally {
      // Server 5 ends with the master's row and replicating, whatever happened above: past the failing insert (it was
      // skipped), its own row is set as the master has it, without binlogging; else its row goes and START SLAVE
      // applies the insert.
      if (covers(seed.sql(5, "SELECT @@gtid_slave_pos")[0]![0]!, failing)) {
        seed.sql(5, `SET SESSION sql_log_bin = 0; UPDATE ${table} SET note = 'from master 1' WHERE id = 1`);
      } else {
        seed.sql(5, `SET SESSION sql_log_bin = 0; DELETE FROM ${table} WHERE id = 1; START SLAVE`);
      }
    }
    await expect
      .poll(() => seed.sql(5, `SELECT note FROM ${table} WHERE id = 1`)[0]?.[0], { message: "server 5 holds the master's row again" })
      .toBe("from master 1");
  });

  test("an operator registers a cluster from one seed server with the credentials form", async ({ page, stack, api, overview, topology }) => {
    const seed = mariadbCluster(stack, "seed000");
    const name = `form-${Date.now()}`;
    const { admin, replication } = seed.users;
    await overview.open();
    await page.getByText("Register a cluster").click();
    const form = page.getByRole("form", { name: "Register a cluster" });
    await form.getByLabel("Cluster name").fill(name);
    await expect(form.getByLabel("Kind")).toHaveValue("mariadb");
    await form.getByLabel("Host").fill("127.0.0.1");
    await form.getByLabel("SQL port").fill(String(seed.server(3).port));
    await form.getByLabel("Database user").fill(admin.user);
    await form.getByLabel("Database password").fill(admin.password);
    await form.getByLabel("Replication user").fill(replication.user);
    await form.getByLabel("Replication password").fill(replication.password);
    await form.getByRole("button", { name: "Register and discover" }).click();

    const outcome = form.getByRole("status", { name: "Registration outcome" });
    await expect(outcome).toContainText(`Registered ${name} with 5 servers`);
    await expect(outcome.getByRole("list", { name: "Stored logins" })).toContainText("database password: stored");
    // Write-only: the passwords are gone from the form and from the page.
    await expect(form.getByLabel("Database password")).toHaveValue("");
    await expect(form.getByLabel("Replication password")).toHaveValue("");
    expect(await page.content()).not.toContain(admin.password);

    const id = Number(/\/clusters\/(\d+)\//.exec((await outcome.getByRole("link", { name }).getAttribute("href"))!)![1]);
    try {
      await outcome.getByRole("link", { name }).click();
      await expect(page.getByRole("heading", { level: 1, name })).toBeVisible();
      await expect(page.getByRole("alert", { name: "Clear-text transport" })).toBeVisible();
      const servers = topology.servers;
      await expect(servers.getByRole("row")).toHaveCount(6);
      await expect(servers.getByRole("row").filter({ hasText: "★ master" })).toHaveCount(2);
      await expect(servers).not.toContainText("version not read yet");
    } finally {
      expect((await api.delete(`/api/v1/clusters/${id}`)).status()).toBe(204);
    }
  });
});

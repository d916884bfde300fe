// A cluster's topology tab, as the specs read it: the graph (a box per server), the servers table (a row per server,
// its name the row header), the replication connections table (a row per connection, the replica's name the row
// header), the alerts banner, the proxies in front of the cluster, and what an empty cluster says instead.
import { expect, type Locator, type Page } from "@playwright/test";
import type { Role } from "../sessions";
import { expectSignedIn } from "./signed-in";

/** A row header's name: a string is the exact name, a pattern matches part of it. */
export type Name = string | RegExp;

export class Topology {
  readonly graph: Locator;
  readonly servers: Locator;
  readonly connections: Locator;
  readonly alerts: Locator;
  readonly proxies: Locator;
  readonly empty: Locator;

  constructor(
    readonly page: Page,
    private readonly role: Role | null,
  ) {
    this.graph = page.getByRole("img", { name: /^Topology graph/ });
    this.servers = page.getByRole("table", { name: "Servers" });
    this.connections = page.getByRole("table", { name: "Replication connections" });
    this.alerts = page.getByRole("alert", { name: "Cluster alerts" });
    this.proxies = page.getByRole("region", { name: "Proxies" });
    this.empty = page.getByRole("region", { name: "No servers yet" });
  }

  /** Opens the topology of cluster `id`; with its `name`, waits for the page's heading to say it. */
  async open(id: number, name?: string): Promise<void> {
    await this.page.goto(`/clusters/${id}/topology`);
    if (name !== undefined) await expect(this.page.getByRole("heading", { level: 1, name })).toBeVisible();
    await expectSignedIn(this.page, this.role);
  }

  private rowOf(table: Locator, name: Name): Locator {
    const header = typeof name === "string" ? this.page.getByRole("rowheader", { name, exact: true }) : this.page.getByRole("rowheader", { name });
    return table.getByRole("row").filter({ has: header });
  }

  /** Server `name`'s row in the servers table. */
  server(name: Name): Locator {
    return this.rowOf(this.servers, name);
  }

  /** The rows of the connections that replica `name` replicates through (one per connection). */
  connectionsOf(name: Name): Locator {
    return this.rowOf(this.connections, name);
  }
}

// The clusters overview ("/"), as the specs read it: a row per cluster, its cells in the table's order — the cluster's
// name (a row header), health (with its problems and warnings), master(s), replicas, worst lag, last drill, automatic
// failover.
import { expect, type Locator, type Page } from "@playwright/test";
import type { Role } from "../sessions";
import { expectSignedIn } from "./signed-in";

export class ClusterOverview {
  constructor(
    readonly page: Page,
    private readonly role: Role | null,
  ) {}

  /** Opens the overview, signed in as the spec's role. */
  async open(): Promise<void> {
    await this.page.goto("/");
    await expect(this.page.getByRole("heading", { level: 1, name: "Clusters" })).toBeVisible();
    await expectSignedIn(this.page, this.role);
  }

  /** The link that opens cluster `name`. */
  link(name: string): Locator {
    return this.page.getByRole("link", { name, exact: true });
  }

  /** Cluster `name`'s row. */
  row(name: string): Locator {
    return this.page.getByRole("row").filter({ has: this.link(name) });
  }

  /** Its health cell: the health word, the problems that make it so, the warnings beside it. */
  health(name: string): Locator {
    return this.row(name).getByRole("cell").nth(0);
  }

  master(name: string): Locator {
    return this.row(name).getByRole("cell").nth(1);
  }

  replicas(name: string): Locator {
    return this.row(name).getByRole("cell").nth(2);
  }

  /** Its worst lag in words, and the connection it is of. */
  worstLag(name: string): Locator {
    return this.row(name).getByRole("cell").nth(3);
  }
}

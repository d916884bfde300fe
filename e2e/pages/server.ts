// A server's own page, as the specs read it: the article named by the server's label, with its alerts, replication
// connections, positions per domain, errant transactions and audit rows.
import { expect, type Locator, type Page } from "@playwright/test";
import type { Role } from "../sessions";
import { expectSignedIn } from "./signed-in";

export class ServerPage {
  constructor(
    readonly page: Page,
    private readonly role: Role | null,
  ) {}

  /** Opens the page of the server reporting server_id `serverId` (MariaDB's, not the control plane's id) of
   * cluster `clusterId`. */
  async open(clusterId: number, serverId: number): Promise<void> {
    await this.page.goto(`/clusters/${clusterId}/servers/${serverId}`);
    await expectSignedIn(this.page, this.role);
  }

  /** The page's article about the server labelled `label` (a pattern: the start of the label, say). */
  article(label: string | RegExp): ServerArticle {
    return new ServerArticle(this.page.getByRole("article", { name: label }), label);
  }
}

export class ServerArticle {
  readonly heading: Locator;
  readonly alerts: Locator;
  readonly connections: Locator;
  readonly positions: Locator;
  readonly errant: Locator;
  readonly audit: Locator;

  constructor(
    readonly root: Locator,
    label: string | RegExp,
  ) {
    this.heading = root.getByRole("heading", { level: 2, name: label });
    this.alerts = root.getByRole("alert", { name: "Alerts about this server" });
    this.connections = root.getByRole("table", { name: "Replication connections" });
    this.positions = root.getByRole("table", { name: "Positions per domain" });
    this.errant = root.getByRole("table", { name: "Errant transactions" });
    this.audit = root.getByRole("list", { name: "Audit rows" });
  }

  async expectShown(): Promise<void> {
    await expect(this.heading).toBeVisible();
  }
}

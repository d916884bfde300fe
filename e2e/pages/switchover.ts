// The switchover form on a cluster's operations tab, as an operator uses it: the source (when the cluster has several
// masters) and the candidate, the dry run's preflight checks and plan per domain, the typed confirmation, the run and
// its outcome with its steps.
import type { Locator, Page } from "@playwright/test";

export class SwitchoverForm {
  readonly form: Locator;
  readonly source: Locator;
  readonly candidate: Locator;
  readonly checks: Locator;
  /** The dry run's plan: each server's position per domain before, and what it replicates from afterwards. */
  readonly plan: Locator;
  readonly confirmation: Locator;
  readonly run: Locator;
  readonly done: Locator;
  /** The operation's error, whatever it says (an undone move's among them). */
  readonly failed: Locator;
  readonly steps: Locator;

  constructor(readonly page: Page) {
    this.form = page.getByRole("group", { name: "Switchover" });
    this.source = this.form.getByLabel("Source");
    this.candidate = this.form.getByRole("combobox", { name: /New master/ });
    this.checks = this.form.getByRole("list", { name: "Preflight checks" }).getByRole("listitem");
    this.plan = this.form.getByRole("table", { name: "Positions per domain before the switchover" });
    this.confirmation = this.form.getByLabel(/Type the cluster name/);
    this.run = this.form.getByRole("button", { name: "Switch over" });
    this.done = this.form.getByRole("status").filter({ hasText: "✓ Done." });
    this.failed = this.form.getByRole("alert");
    this.steps = this.form.getByRole("list", { name: "Steps" }).getByRole("listitem");
  }

  /** Picks the option of `select` whose text contains `text` (a server's name among its labels). */
  async choose(select: Locator, text: string): Promise<void> {
    await select.selectOption((await select.locator("option", { hasText: text }).getAttribute("value"))!);
  }

  /** Asks for the dry run. */
  async preview(): Promise<void> {
    await this.form.getByRole("button", { name: "Preview (dry run)" }).click();
  }
}

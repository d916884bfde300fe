// What every page object checks when it opens a page: the header names the role the spec is signed in as (the
// session the setup project kept for it), so a spec never reads a page as someone else.
import { expect, type Page } from "@playwright/test";
import type { Role } from "../sessions";

export async function expectSignedIn(page: Page, role: Role | null): Promise<void> {
  if (role !== null) await expect(page.getByLabel(`Signed in as ${role}`)).toBeVisible();
}

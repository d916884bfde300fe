// The signed-in sessions the setup project (setup/sign-in.setup.ts) leaves for the specs: per role, its API token and
// the browser's storage state right after signing in with it through the real sign-in form. They are kept beside the
// stack's stack.json, so each stack has its own and they go when it is stopped. `signInThroughForm` is the one way the
// suite types a token into the form: the setup uses it, and so do the specs about signing in.
import { expect, type BrowserContextOptions, type Page } from "@playwright/test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

export type Role = "viewer" | "operator" | "admin";
export const ROLES: readonly Role[] = ["admin", "operator", "viewer"];

/** What the setup keeps per role. */
export interface Session {
  token: string;
  /** The browser's cookies and local storage once signed in (Playwright's `storageState` shape). */
  storageState: Exclude<BrowserContextOptions["storageState"], string | undefined>;
}

function sessionsDir(): string {
  const stack = process.env.FERRY_E2E_STACK;
  if (!stack) throw new Error("FERRY_E2E_STACK is not set: run the suite with `make test-e2e` (scripts/test-e2e.sh starts the stack)");
  return join(dirname(stack), "e2e-sessions");
}

function sessionPath(role: Role): string {
  return join(sessionsDir(), `${role}.json`);
}

export function writeSession(role: Role, session: Session): void {
  mkdirSync(sessionsDir(), { recursive: true, mode: 0o700 });
  writeFileSync(sessionPath(role), JSON.stringify(session), { mode: 0o600 });
}

/** The session the setup project kept for `role` in this run. */
export function readSession(role: Role): Session {
  const path = sessionPath(role);
  if (!existsSync(path)) {
    throw new Error(`no ${role} session at ${path}: the "sign-in" setup project keeps one per role (do not run the specs with --no-deps)`);
  }
  return JSON.parse(readFileSync(path, "utf8")) as Session;
}

/** Signs in with `token` through the sign-in form, as a person does, and waits until the header names the role. */
export async function signInThroughForm(page: Page, token: string, role: Role): Promise<void> {
  await page.goto("/");
  await page.getByLabel("API token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByLabel(`Signed in as ${role}`)).toBeVisible();
}

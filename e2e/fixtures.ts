// What every spec stands on: the stack, one API token per role (created once through the API with the stack's
// admin token), `signIn` through the real sign-in form, a request context for the API, and `picture` for the
// README's pictures (written to docs/screenshots/ when FERRY_E2E_SCREENSHOTS is set).
import { test as base, expect, request, type APIRequestContext, type Locator, type Page } from "@playwright/test";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readStack, type Stack } from "./stack";

export type Role = "viewer" | "operator" | "admin";

interface WorkerFixtures {
  stack: Stack;
  api: APIRequestContext;
  tokens: Record<Role, string>;
}

interface TestFixtures {
  signIn: (role: Role) => Promise<void>;
  /** The page's viewport, or `of` scrolled into view and clipped to it, as docs/screenshots/NAME.png. */
  picture: (name: string, of?: Locator) => Promise<void>;
}

const SCREENSHOT_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "docs", "screenshots");

export const test = base.extend<TestFixtures, WorkerFixtures>({
  stack: [async ({}, use) => use(readStack()), { scope: "worker" }],
  api: [
    async ({ stack }, use) => {
      const context = await request.newContext({
        baseURL: stack.api,
        extraHTTPHeaders: { Authorization: `Bearer ${stack.admin_token}` },
      });
      await use(context);
      await context.dispose();
    },
    { scope: "worker" },
  ],
  tokens: [
    async ({ stack, api }, use) => {
      const tokens: Record<Role, string> = { admin: stack.admin_token, operator: "", viewer: "" };
      for (const role of ["operator", "viewer"] as const) {
        const response = await api.post("/api/v1/tokens", { data: { name: `e2e-${role}-${Date.now()}`, role } });
        expect(response.status(), await response.text()).toBe(201);
        tokens[role] = ((await response.json()) as { token: string }).token;
      }
      await use(tokens);
    },
    { scope: "worker" },
  ],
  signIn: async ({ page, tokens }, use) => {
    await use(async (role: Role) => {
      await page.goto("/");
      await page.getByLabel("API token").fill(tokens[role]);
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect(page.getByLabel(`Signed in as ${role}`)).toBeVisible();
    });
  },
  picture: async ({ page }, use) => {
    await use(async (name: string, of?: Locator) => {
      if (!process.env.FERRY_E2E_SCREENSHOTS) return;
      mkdirSync(SCREENSHOT_DIR, { recursive: true });
      const path = join(SCREENSHOT_DIR, `${name}.png`);
      if (of) await of.screenshot({ path });
      else await page.screenshot({ path, fullPage: false });
    });
  },
});

export { expect };

/** Opens one tab of the stack's cluster page (the tab is part of the path). */
export async function openClusterTab(page: Page, stack: Stack, tab: string, search = ""): Promise<void> {
  await page.goto(`/clusters/${stack.cluster_id}/${tab}${search}`);
  await expect(page.getByRole("heading", { level: 1, name: stack.cluster_name })).toBeVisible();
}

/** The master's name in the control plane's topology now, or null while it does not show exactly one. */
export async function currentMasterName(api: APIRequestContext, stack: Stack): Promise<string | null> {
  const response = await api.get(`/api/v1/clusters/${stack.cluster_id}/topology`);
  expect(response.ok()).toBeTruthy();
  const topology = (await response.json()) as { nodes: { name: string; role: string }[] };
  const masters = topology.nodes.filter((n) => n.role === "master");
  return masters.length === 1 ? masters[0].name : null;
}

/** The master's name, once the topology shows exactly one (it follows the collector, polling every second). */
export async function masterName(api: APIRequestContext, stack: Stack): Promise<string> {
  let name: string | null = null;
  await expect.poll(async () => (name = await currentMasterName(api, stack)), { message: "exactly one master" }).not.toBeNull();
  return name!;
}

// What every spec stands on: the stack, the API as the stack's admin (raw, and typed by the generated schema), one API
// token per role and the browser signed in as the spec's role — both kept by the setup project
// (setup/sign-in.setup.ts), which signs in through the real form once per role; `signIn` for the specs about signing
// in, which type a token into the form themselves; the page objects (pages/); and `picture` for the README's pictures
// (written to docs/screenshots/ when FERRY_E2E_SCREENSHOTS is set).
import { test as base, expect, request, type APIRequestContext, type Locator, type Page } from "@playwright/test";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { typedApi, type TypedApi } from "./api";
import { ClusterOverview } from "./pages/overview";
import { ServerPage } from "./pages/server";
import { SwitchoverForm } from "./pages/switchover";
import { Topology } from "./pages/topology";
import { readSession, ROLES, signInThroughForm, type Role } from "./sessions";
import { readStack, type Stack } from "./stack";

export type { Role };

interface WorkerFixtures {
  stack: Stack;
  api: APIRequestContext;
  /** The API typed by the generated schema, as the stack's admin. */
  client: TypedApi;
  tokens: Record<Role, string>;
}

interface TestOptions {
  /** The role the spec's browser is signed in as from its start (the setup project's session), or null: signed out. */
  role: Role | null;
}

interface TestFixtures {
  /** Signs in through the sign-in form (for the specs about signing in; the others set `role`). */
  signIn: (role: Role) => Promise<void>;
  overview: ClusterOverview;
  topology: Topology;
  switchoverForm: SwitchoverForm;
  serverPage: ServerPage;
  /** The page's viewport, or `of` scrolled into view and clipped to it, as docs/screenshots/NAME.png. */
  picture: (name: string, of?: Locator) => Promise<void>;
}

const SCREENSHOT_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "docs", "screenshots");

export const test = base.extend<TestFixtures & TestOptions, WorkerFixtures>({
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
  client: [async ({ api }, use) => use(typedApi(api)), { scope: "worker" }],
  tokens: [
    async ({}, use) => use(Object.fromEntries(ROLES.map((role) => [role, readSession(role).token])) as Record<Role, string>),
    { scope: "worker" },
  ],
  role: [null, { option: true }],
  storageState: async ({ role, storageState }, use) => use(role === null ? storageState : readSession(role).storageState),
  signIn: async ({ page, tokens }, use) => {
    await use((role: Role) => signInThroughForm(page, tokens[role], role));
  },
  overview: async ({ page, role }, use) => use(new ClusterOverview(page, role)),
  topology: async ({ page, role }, use) => use(new Topology(page, role)),
  switchoverForm: async ({ page }, use) => use(new SwitchoverForm(page)),
  serverPage: async ({ page, role }, use) => use(new ServerPage(page, role)),
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
  const topology = await typedApi(api).get("/api/v1/clusters/{cluster_id}/topology", { path: { cluster_id: stack.cluster_id } });
  const masters = topology.nodes.filter((n) => n.role === "master");
  return masters.length === 1 ? masters[0].name : null;
}

/** The master's name, once the topology shows exactly one (it follows the collector, polling every second). */
export async function masterName(api: APIRequestContext, stack: Stack): Promise<string> {
  let name: string | null = null;
  await expect.poll(async () => (name = await currentMasterName(api, stack)), { message: "exactly one master" }).not.toBeNull();
  return name!;
}

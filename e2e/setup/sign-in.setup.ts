// The setup project the specs depend on: an API token per role (the admin's is the stack's; an operator's and a
// viewer's created through the API with it), then, per role, a browser that signs in with that token through the real
// sign-in form and keeps its storage state (sessions.ts). A spec that only needs to be signed in starts from that state
// (`test.use({ role })`) instead of typing the form again.
import { expect, request, test } from "@playwright/test";
import { typedApi } from "../api";
import { ROLES, signInThroughForm, writeSession, type Role } from "../sessions";
import { readStack } from "../stack";

test("sign in through the form once per role and keep each session", async ({ browser }) => {
  const stack = readStack();
  const api = await request.newContext({ baseURL: stack.api, extraHTTPHeaders: { Authorization: `Bearer ${stack.admin_token}` } });
  const tokens: Record<Role, string> = { admin: stack.admin_token, operator: "", viewer: "" };
  for (const role of ["operator", "viewer"] as const) {
    // Named e2e-<role>-<ms>: the maintenance spec reads the operator's name as the owner of what it sets.
    const created = await typedApi(api).post("/api/v1/tokens", { data: { name: `e2e-${role}-${Date.now()}`, role }, status: 201 });
    expect(created.role).toBe(role);
    tokens[role] = created.token;
  }
  await api.dispose();

  for (const role of ROLES) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signInThroughForm(page, tokens[role], role);
    writeSession(role, { token: tokens[role], storageState: await context.storageState() });
    await context.close();
  }
});

// The tokens page round trip over the real API: an admin creates a token from the page (the secret shown once), the
// token works for an API call, the admin revokes it from the page (after a confirmation): it leaves the list of
// active tokens, is found under Revoked by a search, and no longer works.
import { request } from "@playwright/test";
import { typedApi, type Schemas } from "../api";
import { expect, test } from "../fixtures";

test.use({ role: "admin" });

test("a token created on the page works until it is revoked there", async ({ page, stack, overview }) => {
  await overview.open();
  await page.getByRole("link", { name: "Tokens" }).click();
  await expect(page.getByRole("heading", { name: "API tokens" })).toBeVisible();

  const name = `e2e-page-${Date.now()}`;
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Role").selectOption("viewer");
  await page.getByLabel("Expires in").selectOption("1 day");
  await page.getByRole("button", { name: "Create token" }).click();
  const secret = await page.getByLabel(`Secret of ${name}`).inputValue();
  expect(secret).toMatch(/^ferry_/);

  const asNew = await request.newContext({ baseURL: stack.api, extraHTTPHeaders: { Authorization: `Bearer ${secret}` } });
  const body = await typedApi(asNew).get("/api/v1/me");
  expect(body).toMatchObject({ name, role: "viewer" });
  expect(Date.parse(body.expires_at ?? "") - Date.now()).toBeGreaterThan(23 * 3_600_000);

  await page.getByRole("button", { name: "Done" }).click();
  await expect(page.getByLabel(`Secret of ${name}`)).toHaveCount(0);
  const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name }) });
  await expect(row).toContainText("active");
  await row.getByRole("button", { name: "Revoke" }).click();
  await row.getByRole("button", { name: `Revoke ${name}` }).click();
  await expect(page.getByRole("status")).toHaveText(`Revoked ${name} (listed under Revoked).`);
  await expect(row).toHaveCount(0); // the list shows the active tokens
  await page.getByLabel("Show").selectOption("revoked");
  await page.getByLabel("Search").fill(name);
  await expect(row).toContainText("revoked");

  const refused = await asNew.get("/api/v1/me");
  expect(refused.status()).toBe(401);
  expect(((await refused.json()) as Schemas["ErrorBody"]).error.message).toContain("revoked");
  await asNew.dispose();
});

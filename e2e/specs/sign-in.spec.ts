// Signing in: a token the API does not know is refused on the sign-in page; a valid one opens the clusters
// overview (health, master, replicas, worst lag, last drill), with the role shown; signing out ends the session; the
// session is kept for every tab of the browser, a sign-out in one tab signs out the others, and a page left while it
// checks the kept sign-in does not sign out.
import { expect, test } from "../fixtures";

test("a token the API does not know is refused with a message, and nothing opens", async ({ page }) => {
  await page.goto("/");
  await page.getByLabel("API token").fill("ferry_not-a-real-token-0000000000000000");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert")).toBeVisible();
  await expect(page.getByRole("heading", { name: "Clusters" })).toHaveCount(0);
  await expect(page.getByLabel("API token")).toBeVisible();
});

test("an admin signs in and sees the cluster overview with its master and replicas", async ({ page, signIn, stack, picture }) => {
  await signIn("admin");
  await expect(page.getByRole("heading", { name: "Clusters" })).toBeVisible();
  const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: stack.cluster_name }) });
  await expect(row).toBeVisible();
  const cells = row.getByRole("cell"); // health, master, replicas, worst lag, last drill, automatic failover
  await expect(cells.nth(1)).toHaveText(/^node[123]$/);
  await expect(cells.nth(2)).toHaveText(/^2 of 3 servers/);
  await picture("clusters");

  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByLabel("API token")).toBeVisible();
});

test("a sign-in is kept for a new tab, and signing out in one tab signs out the other", async ({ context, page, signIn }) => {
  await signIn("admin");
  const second = await context.newPage();
  await second.goto("/");
  await expect(second.getByLabel("Signed in as admin")).toBeVisible();
  await expect(second.getByLabel("API token")).toHaveCount(0);

  await second.getByRole("button", { name: "Sign out" }).click();
  await expect(second.getByLabel("API token")).toBeVisible();
  await expect(page.getByLabel("API token")).toBeVisible();
  await expect(page.getByRole("status")).toHaveText(/Signed out in another tab/);
  await page.reload();
  await expect(page.getByLabel("API token")).toBeVisible();
});

test("leaving a page while it checks the kept sign-in does not sign out", async ({ page, signIn }) => {
  await signIn("viewer");
  // The next check of the kept token gets no answer before the page is left.
  let held = false;
  await page.route("**/api/v1/me", () => {
    held = true; // never answered: the navigation below cuts it
  });
  await page.reload();
  await expect.poll(() => held).toBe(true);
  await page.unroute("**/api/v1/me");
  await page.goto("/collector");
  await expect(page.getByLabel("Signed in as viewer")).toBeVisible();
  await expect(page.getByRole("heading", { name: "Collector health" })).toBeVisible();
});

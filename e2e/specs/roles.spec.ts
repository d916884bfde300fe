// Role gating: a viewer reads everything but sees no control that changes state — no switchover, no drill run,
// no schedule editing — and is told why.
import { expect, openClusterTab, test } from "../fixtures";

test("a viewer sees no switchover control, and no drill controls", async ({ page, signIn, stack }) => {
  await signIn("viewer");
  await openClusterTab(page, stack, "operations");
  await expect(page.getByText("Your token's role (viewer) may read but not start operations.")).toBeVisible();
  await expect(page.getByRole("heading", { name: "History" })).toBeVisible();
  await expect(page.getByRole("group", { name: "Switchover" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: /Switch over|Preview \(dry run\)/ })).toHaveCount(0);

  await page.getByRole("link", { name: "Drills" }).click();
  await expect(page.getByRole("heading", { name: "Schedules" })).toBeVisible();
  await expect(page.getByRole("button", { name: /Run drill now|New schedule/ })).toHaveCount(0);
});

test("an operator sees the switchover control", async ({ page, signIn, stack }) => {
  await signIn("operator");
  await openClusterTab(page, stack, "operations");
  await expect(page.getByRole("group", { name: "Switchover" })).toBeVisible();
  await expect(page.getByRole("button", { name: "Preview (dry run)" }).first()).toBeVisible();
});

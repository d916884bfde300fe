// Drill schedules through the UI: create one (the cron read back in plain words with its next runs while it is
// typed, an invalid one refused before sending), see it listed with the API's next runs, edit it, delete it.
import { expect, openClusterTab, test } from "../fixtures";

test.use({ role: "operator" });

test("an operator creates, edits and deletes a drill schedule, the cron previewed in words", async ({ page, stack }) => {
  await openClusterTab(page, stack, "drills");
  const name = `nightly-${Date.now()}`;

  await page.getByRole("button", { name: "New schedule" }).click();
  const form = page.getByRole("form", { name: "New drill schedule" });
  await form.getByLabel("Name").fill(name);
  const cron = form.getByLabel(/^Cron/);
  const create = form.getByRole("button", { name: "Create schedule" });

  await cron.fill("61 2 * * *");
  await expect(form.getByRole("status").filter({ hasText: "✕" })).toBeVisible();
  await expect(create).toBeDisabled();

  await cron.fill("30 2 * * 1-5");
  await form.getByLabel("Time zone").fill("Europe/Berlin");
  const preview = form.locator(".cron-preview");
  await expect(preview).toContainText("At 02:30, Monday through Friday (Europe/Berlin)");
  await expect(preview.getByRole("listitem")).toHaveCount(5);
  await expect(preview.getByRole("listitem").first()).toContainText(/^(Mon|Tue|Wed|Thu|Fri) .* 02:30 Europe\/Berlin/);
  await create.click();

  const schedules = page.getByRole("table", { name: "Drill schedules" });
  const row = schedules.getByRole("row", { name: new RegExp(`^${name} `) });
  await expect(row).toContainText("30 2 * * 1-5");
  await expect(row).toContainText("At 02:30, Monday through Friday");
  await expect(row.getByRole("cell").nth(2)).toContainText(/02:30 Europe\/Berlin/); // the API's next runs

  await row.getByRole("button", { name: "Edit" }).click();
  const edit = page.getByRole("form", { name: `Edit schedule ${name}` });
  await edit.getByLabel(/^Cron/).fill("0 4 * * 6");
  await expect(edit.locator(".cron-preview")).toContainText("At 04:00, only on Saturday");
  await edit.getByRole("button", { name: "Save schedule" }).click();
  await expect(schedules.getByRole("row", { name: new RegExp(`^${name} `) })).toContainText("0 4 * * 6");

  await schedules.getByRole("row", { name: new RegExp(`^${name} `) }).getByRole("button", { name: "Delete" }).click();
  await page.getByRole("button", { name: `Delete ${name} (runs are kept)` }).click();
  await expect(schedules.getByRole("row", { name: new RegExp(`^${name} `) })).toHaveCount(0);
});

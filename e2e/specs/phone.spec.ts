// Phone: at 390×844 no page of the dashboard is wider than the screen — tables and the interleaving lanes scroll
// inside their own box, the topology stacks its servers one under another, the header wraps with "Sign out"
// readable on its dark bar.
// Every page is visited, for the ferryd cluster and for seed000 (two masters, five MariaDB servers): each tab, the
// server administration's forms, and each server's own page — and on the whole tour, no page logs an error in the
// console, throws, or has a request fail (a network failure, or an answer of 400 or more).
import { expect, test } from "../fixtures";
import type { Page } from "@playwright/test";

/** Collects what goes wrong on `page` from now on: console errors, uncaught exceptions, requests that fail (but
 * those the browser aborts itself when a page is left: a navigation cancels what the old page still waited for) and
 * answers of 400 or more, each named with the page it happened on. */
function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  const where = () => new URL(page.url()).pathname;
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`${where()}: console error: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`${where()}: uncaught ${error.name}: ${error.message}`));
  page.on("requestfailed", (request) => {
    const failure = request.failure()?.errorText ?? "failed";
    if (failure !== "net::ERR_ABORTED") problems.push(`${where()}: ${request.method()} ${request.url()}: ${failure}`);
  });
  page.on("response", (response) => {
    if (response.status() >= 400) {
      problems.push(`${where()}: ${response.request().method()} ${response.url()} answered ${response.status()}`);
    }
  });
  return problems;
}

const PHONE = { width: 390, height: 844 };
const TABS = ["topology", "positions", "interleavings", "lag", "operations", "drills", "audit"];

/** How much wider than the viewport the page's document is (0 when it fits). */
async function overflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

/** The elements sticking out past the right edge, named, to say what to fix when the page is too wide. */
async function culprits(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const width = window.innerWidth;
    const names: string[] = [];
    for (const element of Array.from(document.querySelectorAll("body *"))) {
      const box = element.getBoundingClientRect();
      if (box.right <= width + 1 || box.width === 0) continue;
      // Only the outermost: an element inside a box that scrolls sideways does not widen the page.
      let parent = element.parentElement;
      let clipped = false;
      while (parent && parent !== document.body) {
        const style = getComputedStyle(parent);
        if (style.overflowX === "auto" || style.overflowX === "scroll" || style.overflowX === "hidden") clipped = true;
        parent = parent.parentElement;
      }
      if (!clipped) names.push(`${element.tagName.toLowerCase()}.${element.className} right=${Math.round(box.right)}`);
    }
    return names.slice(0, 8);
  });
}

/** Waits until nothing on the page is still loading, then for the document to fit (charts size themselves a frame
 * after their data arrives); names what sticks out when it does not. */
async function expectFits(page: Page, what: string): Promise<void> {
  await expect(page.getByText(/^Loading .*…$/)).toHaveCount(0);
  try {
    await expect.poll(() => overflow(page), { timeout: 20_000 }).toBeLessThanOrEqual(0);
  } catch {
    throw new Error(`${what} is ${await overflow(page)} px wider than ${PHONE.width} px: ${(await culprits(page)).join("; ")}`);
  }
}

test.use({ viewport: PHONE });

test("no page is wider than a 390 px phone screen, and none logs an error or fails a request", async ({ page, signIn, stack, client }) => {
  const problems = watchProblems(page);
  await page.goto("/");
  await expect(page.getByLabel("API token")).toBeVisible();
  await expectFits(page, "the sign-in page");

  await signIn("admin");
  const signOut = page.getByRole("button", { name: "Sign out" });
  await expect(signOut).toBeInViewport();
  // Readable: its text is not the colour of what is behind it (it was white on the page's white when cut off).
  const colours = await signOut.evaluate((button) => {
    let behind: Element | null = button;
    let background = "rgba(0, 0, 0, 0)";
    while (behind && (background === "rgba(0, 0, 0, 0)" || background === "transparent")) {
      background = getComputedStyle(behind).backgroundColor;
      behind = behind.parentElement;
    }
    return { text: getComputedStyle(button).color, background };
  });
  expect(colours.text).not.toBe(colours.background);
  await expectFits(page, "the overview");

  // Each page load asks the API who the token is: wait for the answer, so each page is measured signed in.
  const signedIn = page.getByLabel("Signed in as admin");
  await page.goto("/collector");
  await expect(page.getByRole("heading", { level: 1, name: "Collector health" })).toBeVisible();
  await expect(signedIn).toBeVisible();
  await expectFits(page, "collector health");

  await page.goto("/tokens");
  await expect(page.getByRole("table", { name: "API tokens" })).toBeVisible();
  await expect(signedIn).toBeVisible();
  await expectFits(page, "API tokens");

  await page.goto("/audit");
  await expect(signedIn).toBeVisible();
  await expect(page.getByText(/^Loading .*…$/)).toHaveCount(0);
  await expectFits(page, "the audit log");

  const clusters = [stack.cluster_id, ...(stack.mariadb_clusters ?? []).map((c) => c.id)];
  for (const id of clusters) {
    for (const tab of TABS) {
      await page.goto(`/clusters/${id}/${tab}`);
      await expect(page.getByRole("navigation", { name: "Cluster views" })).toBeVisible();
      await expect(signedIn).toBeVisible();
      await expectFits(page, `cluster ${id}, tab ${tab}`);
      // The topology stacks its servers on a phone instead of cutting the graph off inside a sideways box.
      if (tab === "topology") {
        await expect(page.getByRole("list", { name: /^Topology, stacked: \d+ servers/ })).toBeVisible();
        await expect(page.getByRole("img", { name: /^Topology graph/ })).toHaveCount(0);
      }
    }
    // The server administration unfolded (its forms), then every server's own page.
    await page.goto(`/clusters/${id}/topology`);
    await page.getByText("Add a server, discover servers").click();
    await expect(page.getByRole("form", { name: "Add a server" })).toBeVisible();
    await expectFits(page, `cluster ${id}, adding a server`);
    const servers = await client.get("/api/v1/clusters/{cluster_id}/servers", { path: { cluster_id: id } });
    for (const server of servers) {
      await page.goto(`/clusters/${id}/servers/${server.reported_server_id ?? `registered-${server.id}`}`);
      await expect(page.getByRole("heading", { level: 2, name: server.label })).toBeVisible();
      await expect(signedIn).toBeVisible();
      await expectFits(page, `cluster ${id}, the page of ${server.label}`);
    }
  }
  expect(problems, "console errors, exceptions and failed requests on the tour").toEqual([]);
});

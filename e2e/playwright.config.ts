// Playwright over the real stack: Debian's Chromium, its headless shell (the suite never downloads a browser;
// scripts/test-e2e.sh says why the shell), one worker since every
// spec drives the same cluster, the dashboard served by the API itself. The "sign-in" setup project runs first
// (whatever specs are picked): it signs in through the form once per role and keeps the sessions the specs start from.
import { defineConfig } from "@playwright/test";
import { readStack } from "./stack";

const stack = readStack();

export default defineConfig({
  projects: [
    { name: "sign-in", testDir: "./setup", testMatch: /\.setup\.ts$/ },
    { name: "specs", testDir: "./specs", dependencies: ["sign-in"] },
  ],
  fullyParallel: false,
  workers: 1,
  forbidOnly: true,
  retries: 0,
  // A switchover or a drill is a real one: give each spec room, and each expectation a bound rather than a sleep.
  // Generous bounds, for the suite runs beside the backend's (scripts/test.sh): a page that shows what it waits for
  // within seconds alone may need several times that on a machine whose cores are both taken.
  timeout: 300_000,
  expect: { timeout: 60_000 },
  reporter: [["list"]],
  outputDir: "test-results",
  use: {
    baseURL: stack.api,
    browserName: "chromium",
    viewport: { width: 1400, height: 900 },
    // A failed spec keeps its trace: every action with the page's DOM before and after, its requests and console.
    // Without the screencast (a failure's own screenshot is kept beside): recording frames of every page of every
    // spec cost the browser and the runner a tenth of the suite's CPU, for traces a passing run throws away.
    trace: { mode: "retain-on-failure", screenshots: false, snapshots: true, sources: false },
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: process.env.FERRY_E2E_CHROMIUM ?? "/usr/bin/chromium-headless-shell",
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    },
  },
});

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
  // A spec that fails runs once more, traced (below), and the run fails all the same: a spec that passes only on its
  // second try is flaky, and flaky fails the run (failOnFlakyTests). The retry is for the trace alone.
  retries: 1,
  failOnFlakyTests: true,
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
    // A failed spec's second try is traced: every action with the page's DOM before and after, its requests and
    // console (its first try keeps its screenshot and the page's accessibility tree in error-context.md). A passing
    // run records nothing: tracing every spec to throw the traces away cost a sixth of the suite's CPU (ten specs
    // with the stack's start: 139 CPU-s traced, 115 untraced), and the screencast a tenth more before that.
    trace: { mode: "on-first-retry", screenshots: false, snapshots: true, sources: false },
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: process.env.FERRY_E2E_CHROMIUM ?? "/usr/bin/chromium-headless-shell",
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    },
  },
});

// Vite build and dev server, and Vitest's settings. The dashboard is served by the backend from the same origin
// (API under /api/v1); `npm run dev` proxies /api to a backend on FERRY_API_URL (default http://127.0.0.1:8000).
import { availableParallelism } from "node:os";

import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

const apiUrl = process.env.FERRY_API_URL ?? "http://127.0.0.1:8000";

export default defineConfig({
  plugins: [react()],
  base: "/",
  build: {
    outDir: "dist",
    sourcemap: true,
    chunkSizeWarningLimit: 1200,
  },
  server: {
    proxy: { "/api": { target: apiUrl, changeOrigin: false } },
  },
  test: {
    globals: true,
    restoreMocks: true,
    // A test's bound, not its expected time: five seconds (the default) failed under load beside the engine's tests.
    testTimeout: 60_000,
    // One test file per core: Vitest's default leaves a core to the machine, which on two cores halves the speed
    // of a suite whose files each spend most of their time in their own jsdom.
    maxWorkers: availableParallelism(),
    minWorkers: availableParallelism(),
    // Each file in a VM context of its own within a few long-lived worker threads, not a fresh worker per file: jsdom
    // and Node's own modules load once per worker, and each file still gets new globals, a new DOM and its own module
    // graph. The whole suite on two cores: 134 CPU-s (75 s) with a worker thread per file, 58 CPU-s (38 s) so.
    pool: "vmThreads",
    // The libraries every component file imports, bundled once into ES modules (node_modules/.vite/vitest) rather than
    // loaded as hundreds of CommonJS files per file; in a VM context a CommonJS file of react-router-dom or recharts
    // that requires an ES module would not load at all. The cron libraries load as they are: bundled, cron-parser's
    // named export `CronExpressionParser` came out undefined and every cron preview failed.
    deps: {
      optimizer: {
        web: {
          enabled: true,
          include: [
            "react", "react-dom", "react-dom/client", "react-router-dom", "recharts", "@tanstack/react-query",
            "openapi-fetch", "@testing-library/react", "@testing-library/dom", "@testing-library/user-event",
          ],
        },
        // The logic's files run in Node; useUrlState.test.ts imports a module that imports react-router-dom.
        ssr: { enabled: true, include: ["react-router-dom"] },
      },
    },
    // Two kinds of test files: the logic's (`*.test.ts`: GTIDs, formats, series, layouts) run in Node, and the
    // components' (`*.test.tsx`) in a DOM of their own (jsdom, with Testing Library's cleanup between tests). A jsdom
    // costs a file more than half a second of CPU to set up, which the logic's 27 files do not need.
    projects: [
      { extends: true, test: { name: "logic", environment: "node", include: ["src/**/*.test.ts"] } },
      {
        extends: true,
        test: { name: "components", environment: "jsdom", include: ["src/**/*.test.tsx"], setupFiles: ["src/test/setup.ts"] },
      },
    ],
  },
});

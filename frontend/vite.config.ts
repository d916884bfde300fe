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
    // Worker threads rather than child processes: a file's worker starts cheaper. The whole suite on two cores, two
    // runs each: 148 and 139 CPU-s (83 and 76 s) in processes, 141 and 126 CPU-s (78 and 70 s) in threads. No test
    // here needs a process of its own (none changes the working directory or loads a native addon).
    pool: "threads",
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

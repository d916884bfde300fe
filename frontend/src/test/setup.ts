// Vitest setup: clean storage and DOM between tests, and a generous bound on every wait for the DOM (findBy*,
// waitFor): a wait ends as soon as its condition holds, so the bound only decides when a busy machine is called
// failing (the default of one second failed on a machine running other suites beside this one).
import { cleanup, configure } from "@testing-library/react";
import { afterEach } from "vitest";

configure({ asyncUtilTimeout: 15_000 });

afterEach(() => {
  cleanup();
  window.sessionStorage.clear();
  window.localStorage.clear();
});

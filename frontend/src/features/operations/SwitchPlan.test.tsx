// A switchover's plan as its dry run reports it, rendered on its own: the change consumers of the servers it moves,
// each with what the move does to its stream, and the note on what servers cannot know; a plan without consumers
// (recorded before they were reported) shows no such section.
import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { operation } from "../../test/fixtures";
import { SwitchPlan } from "./SwitchPlan";

const ON_MASTER =
  "follows the master: moves to b (server_id 2) from its own position once it sees a (server_id 1) read-only; "
  + "subscribed to a (server_id 1) alone: goes on there, a (server_id 1) replicating b (server_id 2)'s commits to it";
const NOTE = "Only the consumers connected now are known, and a server cannot tell one that follows the master "
  + "(it moves to b (server_id 2) by itself) from one subscribed to it alone.";

const PLAN: Schemas["SwitchPlanView"] = {
  source: "a (server_id 1)", candidate: "b (server_id 2)",
  positions: { "a (server_id 1)": { "1": "1-1-40" }, "b (server_id 2)": { "1": "1-1-40" } },
  lenders: { "domain 1": "a (server_id 1) up to 1-1-40, then b (server_id 2)'s own writes" },
  afterwards: { "a (server_id 1)": ["'main' from b (server_id 2)"], "b (server_id 2)": [] },
  moved: [],
  consumers: [
    { server: "a (server_id 1)", name: "cache-invalidator", address: "10.0.0.9:51234", position: "1-1-40",
      afterwards: ON_MASTER },
    { server: "b (server_id 2)", name: "indexer", address: "10.0.0.7:40022", position: "",
      afterwards: "unchanged: b (server_id 2) becomes the master" },
  ],
  consumers_note: NOTE,
};

const dryRun = (plan: Schemas["SwitchPlanView"]) =>
  operation({ id: 7, state: "succeeded", result: { checks: [], old_master_registered_server_id: 1, new_master_registered_server_id: 2, plan } } as never);

describe("switch plan", () => {
  it("names each change consumer of the moved servers with what happens to its stream", () => {
    render(<SwitchPlan operation={dryRun(PLAN)} />);
    const section = screen.getByRole("region", { name: "Change consumers" });
    const items = within(section).getAllByRole("listitem").map((li) => li.textContent);
    expect(items).toEqual([
      `cache-invalidator (10.0.0.9:51234) on a (server_id 1) at 1-1-40: ${ON_MASTER}`,
      "indexer (10.0.0.7:40022) on b (server_id 2) at —: unchanged: b (server_id 2) becomes the master",
    ]);
    expect(screen.getByText(NOTE)).toBeTruthy();
  });

  it("shows no consumer section for a plan without consumers", () => {
    render(<SwitchPlan operation={dryRun({ ...PLAN, consumers: [], consumers_note: null })} />);
    expect(screen.queryByRole("region", { name: "Change consumers" })).toBeNull();
    expect(screen.getByText(/b \(server_id 2\) replaces a \(server_id 1\)/)).toBeTruthy();
  });
});

// The change consumers a failover affects, as its dry run names them: through the failover form against a fake
// backend (the exact dry-run request, each consumer with what happens to its stream, and the note saying a dead
// master's consumers cannot be listed — with no list when none is known), and in a failover drill's preview.
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { CLUSTER, TOPOLOGY, operation, step } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { FailoverPreflight } from "../drills/FailoverPreflight";
import { OperationsView } from "./OperationsView";

const DEAD =
  "a (server_id 1) does not answer (127.0.0.1:7401: unreachable): its consumers cannot be listed, so none listed "
  + "here does not mean none. One that follows the master moves to b (server_id 2) from its own position once it "
  + "finds b (server_id 2) writable; one subscribed to a (server_id 1) alone receives nothing until a (server_id 1) "
  + "answers again and rejoins as a replica of b (server_id 2).";
const ON_B: Schemas["PlanConsumer"] = {
  server: "b (server_id 2)", name: "indexer", address: "10.0.0.7:40022", position: "1-1-40",
  afterwards: "unchanged: b (server_id 2) becomes the master",
};

function backend(consumers: Schemas["PlanConsumer"][]) {
  return mockApi({
    "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
    "POST /api/v1/clusters/1/operations/failover": () => ({
      status: 202, body: operation({ id: 4, type: "failover", dry_run: true }),
    }),
    "GET /api/v1/clusters/1/operations/4": () => ({
      body: operation({
        id: 4, type: "failover", state: "succeeded", steps: [step("confirm_master_lost", "passed")],
        result: { checks: [], old_master_registered_server_id: 1, new_master_registered_server_id: 2, consumers, consumers_note: DEAD },
      }),
    }),
  });
}

async function preview(consumers: Schemas["PlanConsumer"][]) {
  const { requests } = backend(consumers);
  const user = userEvent.setup();
  renderSignedIn(<OperationsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
  const form = await screen.findByRole("group", { name: "Failover" });
  await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
  await within(form).findByText(DEAD);
  return { form, requests };
}

describe("a failover's change consumers", () => {
  it("names each consumer of the moved servers and says the dead master's cannot be listed", async () => {
    const { form, requests } = await preview([ON_B]);
    const posts = requests.filter((r) => r.method === "POST").map((r) => [r.path, r.body]);
    expect(posts).toEqual([["/api/v1/clusters/1/operations/failover", { dry_run: true, candidate_registered_server_id: null }]]);
    const section = within(form).getByRole("region", { name: "Change consumers" });
    expect(within(section).getAllByRole("listitem").map((li) => li.textContent)).toEqual([
      "indexer (10.0.0.7:40022) on b (server_id 2) at 1-1-40: unchanged: b (server_id 2) becomes the master",
    ]);
  }, 30_000); // bounds for a loaded machine, not expectations

  it("shows the note without a list when no consumer is known", async () => {
    const { form } = await preview([]);
    expect(within(form).queryByRole("region", { name: "Change consumers" })).toBeNull();
  }, 30_000);

  it("shows a failover drill's consumers in its preview", () => {
    const onA: Schemas["PlanConsumer"] = {
      server: "a (server_id 1)", name: "cache", address: "10.0.0.9:51234", position: "1-1-40",
      afterwards: "follows the master: moves to b (server_id 2) from its own position once it sees a (server_id 1) "
        + "read-only; subscribed to a (server_id 1) alone: receives nothing new while a (server_id 1) is fenced, then "
        + "b (server_id 2)'s commits once a (server_id 1) rejoins as its replica",
    };
    const note = "Only the consumers connected now are known.";
    const preflight = { master: "a (server_id 1)", candidate: "b (server_id 2)", domains: [1], not_candidates: {} };
    render(
      <FailoverPreflight
        operation={operation({
          id: 13, type: "drill", state: "succeeded", steps: [step("preflight", "passed", preflight)],
          result: { checks: [], consumers: [onA], consumers_note: note },
        })}
      />,
    );
    const plan = screen.getByRole("region", { name: "Failover plan" });
    const section = within(plan).getByRole("region", { name: "Change consumers" });
    expect(within(section).getAllByRole("listitem").map((li) => li.textContent)).toEqual([
      `cache (10.0.0.9:51234) on a (server_id 1) at 1-1-40: ${onA.afterwards}`,
    ]);
    expect(within(plan).getByText(note)).toBeTruthy();
  });
});

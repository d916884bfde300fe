// "Skip and restart" on a replica stopped by a duplicate key, against a fake backend: the data-loss warning before
// anything runs, the dry run's exact request and the GTID it would skip, the typed cluster name that unlocks the
// run, the run's exact request, and the outcome (what was skipped, the data lost, replicating again); a count out
// of range sends nothing; the outcome stays once the connection runs again; a viewer sees the error but no control.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { CLUSTER, TOPOLOGY, operation, step } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { TopologyView } from "./TopologyView";

const DUPLICATE = "Could not execute Write_rows_v1 event on table app.t; Duplicate entry '7' for key 'PRIMARY', Error_code: 1062";
const STOPPED: Schemas["TopologyGraph"] = {
  ...TOPOLOGY,
  edges: TOPOLOGY.edges.map((e) =>
    e.replica_registered_server_id === 3
      ? { ...e, running: false, sql_state: "error", last_error_code: "1062", last_error_message: DUPLICATE }
      : e,
  ),
};
const LOSS = "0-1-2 was skipped on server 3 (c): not applied there, yet counted as applied";

function backend() {
  let runReads = 0;
  let skipped = false;
  return mockApi({
    "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
    "GET /api/v1/clusters/1/topology": () => ({ body: skipped ? TOPOLOGY : STOPPED }),
    "GET /api/v1/clusters/1/servers": () => ({ body: [] }),
    "POST /api/v1/clusters/1/operations/skip-transactions": (req) => {
      if ((req.body as { dry_run: boolean }).dry_run) {
        return { status: 202, body: operation({ id: 1, type: "skip_transactions", dry_run: true }) };
      }
      skipped = true;
      return { status: 202, body: operation({ id: 2, type: "skip_transactions", dry_run: false, state: "running" }) };
    },
    "GET /api/v1/clusters/1/operations/1": () => ({
      body: operation({
        id: 1, type: "skip_transactions", state: "succeeded",
        steps: [step("preflight", "passed", { connection: "main", code: "1062" }), step("identify", "passed")],
        result: { skipped_gtids: ["0-1-2"], data_loss: `would lose: ${LOSS}` },
      }),
    }),
    "GET /api/v1/clusters/1/operations/2": () => {
      runReads += 1;
      const done = runReads > 1;
      return {
        body: operation({
          id: 2, type: "skip_transactions", dry_run: false, state: done ? "succeeded" : "running",
          steps: [step("preflight", "passed"), step("skip", "passed"), step("start", done ? "passed" : "running")],
          result: done
            ? { skipped_gtids: ["0-1-2"], skipped_gtids_source: "the relay log of server 3 (c)", data_loss: LOSS, replicating: true }
            : {},
        }),
      };
    },
  });
}

describe("skip the failing transaction", () => {
  it("warns, previews the GTID, needs the cluster's name, then skips exactly it and shows the outcome", async () => {
    const { requests } = backend();
    const user = userEvent.setup();
    renderSignedIn(<TopologyView clusterId={1} />, { role: "operator" });
    const table = await screen.findByRole("table", { name: "Replication connections" });
    const row = within(table).getByRole("row", { name: /^c / });
    expect(within(row).getByText(/Duplicate entry '7'/)).toBeTruthy();
    expect(within(table).getAllByRole("button", { name: "Skip and restart…" })).toHaveLength(1);
    await user.click(within(row).getByRole("button", { name: "Skip and restart…" }));

    const form = await screen.findByRole("group", { name: "Skip the failing transaction on c" });
    expect(within(form).getByRole("note").textContent).toContain("The skipped transaction will be lost on c");
    expect(within(form).queryByRole("button", { name: "Skip 1 transaction and restart" })).toBeNull();
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    const posts = () => requests.filter((r) => r.method === "POST");
    expect(posts().map((r) => [r.path, r.body])).toEqual([
      ["/api/v1/clusters/1/operations/skip-transactions", { dry_run: true, registered_server_id: 3, connection: "main", count: 1 }],
    ]);
    expect(await within(form).findByText("0-1-2")).toBeTruthy();

    const run = within(form).getByRole("button", { name: "Skip 1 transaction and restart" }) as HTMLButtonElement;
    expect(run.disabled).toBe(true);
    await user.type(within(form).getByLabelText(/Type the cluster name/), "prod-eu");
    expect(run.disabled).toBe(false);
    await user.click(run);
    await waitFor(() => expect(posts()).toHaveLength(2));
    const sent = posts()[1]!;
    expect(sent.body).toEqual({ dry_run: false, registered_server_id: 3, connection: "main", count: 1 });
    expect(sent.headers.get("idempotency-key")).toBeTruthy();

    const outcome = await within(form).findByLabelText("Skip outcome", {}, { timeout: 5000 });
    expect(within(outcome).getByText("0-1-2")).toBeTruthy();
    expect(within(outcome).getByText(/\(from the relay log of server 3 \(c\)\)/)).toBeTruthy();
    expect(within(outcome).getByRole("alert").textContent).toBe(LOSS);
    expect(within(outcome).getByText("✓ It replicates again.")).toBeTruthy();

    // The connection runs again (the next poll): its error goes, the outcome stays.
    await waitFor(() => expect(within(table).queryByText(/Duplicate entry/)).toBeNull(), { timeout: 5000 });
    expect(screen.getByLabelText("Skip outcome")).toBeTruthy();
  });

  it("sends nothing for a count beyond 100", async () => {
    const { requests } = backend();
    const user = userEvent.setup();
    renderSignedIn(<TopologyView clusterId={1} />, { role: "operator" });
    await user.click(await screen.findByRole("button", { name: "Skip and restart…" }));
    const form = await screen.findByRole("group", { name: "Skip the failing transaction on c" });
    const count = within(form).getByLabelText("Transactions to skip");
    await user.clear(count);
    await user.type(count, "101");
    expect(within(form).getByText("Between 1 and 100.")).toBeTruthy();
    expect((within(form).getByRole("button", { name: "Preview (dry run)" }) as HTMLButtonElement).disabled).toBe(true);
    expect(requests.filter((r) => r.method === "POST")).toEqual([]);
  });

  it("shows a viewer the error but no control", async () => {
    backend();
    renderSignedIn(<TopologyView clusterId={1} />, { role: "viewer" });
    const table = await screen.findByRole("table", { name: "Replication connections" });
    expect(within(table).getByText(/Duplicate entry '7'/)).toBeTruthy();
    expect(within(table).getByText("1062")).toBeTruthy();
    expect(within(table).queryByRole("button")).toBeNull();
  });
});

// "Check consistency with its source…" against a fake backend: the dry run's and the run's exact requests; a run that
// found drift says how many chunks differ and lists each with its key range and row counts, table by table; a bad
// chunk size is refused before any request; a viewer sees no control. The key-range words are pure.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { CLUSTER, operation, step } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { ConsistencyCheck, chunkRange } from "./ConsistencyCheck";

const names = (id: number) => ({ 1: "a", 2: "b" })[id] ?? `server ${id}`;
const DRIFTED = {
  registered_server_id: 2, source_registered_server_id: 1, connection: "main", chunks_checked: 11, chunks_drifted: 2,
  consistent: false,
  tables: [
    { table: "app.items", key: ["id"], chunks: 10, source_rows: 1000, replica_rows: 999, missing_on: null, drifted: [
      { index: 3, lower: [301], upper: [401], source_rows: 100, replica_rows: 100, position: "0-1-9" },
      { index: 8, lower: [801], upper: [901], source_rows: 100, replica_rows: 99, position: "0-1-9" },
    ] },
    { table: "app.other", key: ["id"], chunks: 1, source_rows: 5, replica_rows: 5, missing_on: null, drifted: [] },
  ],
};

describe("check a replica's consistency with its source", () => {
  it("runs the previewed check and lists the chunks that differ with their key ranges", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "POST /api/v1/clusters/1/operations/consistency-check": (req) =>
        (req.body as { dry_run: boolean }).dry_run
          ? { status: 202, body: operation({ id: 1, type: "consistency_check", dry_run: true } as never) }
          : { status: 202, body: operation({ id: 2, type: "consistency_check", dry_run: false, state: "running" } as never) },
      "GET /api/v1/clusters/1/operations/1": () => ({
        body: operation({ id: 1, type: "consistency_check", dry_run: true, state: "succeeded", steps: [step("preflight", "passed")],
          result: { registered_server_id: 2, source_registered_server_id: 1, tables: [] } } as never),
      }),
      "GET /api/v1/clusters/1/operations/2": () => ({
        body: operation({ id: 2, type: "consistency_check", dry_run: false, state: "failed", error: "b differs from a",
          steps: [step("preflight", "passed"), step("compare", "passed")], result: DRIFTED } as never),
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<ConsistencyCheck clusterId={1} serverId={2} label="b" serverName={names} />, { role: "operator" });
    await user.click(await screen.findByRole("button", { name: "Check consistency with its source…" }));
    const form = await screen.findByRole("group", { name: "Check b against its source" });
    await user.clear(within(form).getByLabelText("Rows per chunk"));
    await user.type(within(form).getByLabelText("Rows per chunk"), "100");
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    expect(await within(form).findByText("It can be compared with a.", {}, { timeout: 5000 })).toBeTruthy();
    await user.click(within(form).getByRole("button", { name: "Check" }));
    const posts = () => requests.filter((r) => r.method === "POST");
    await waitFor(() => expect(posts()).toHaveLength(2));
    expect(posts().map((r) => r.body)).toEqual([
      { dry_run: true, registered_server_id: 2, chunk_rows: 100, chunks_per_stop: 10, pause_ms: 0 },
      { dry_run: false, registered_server_id: 2, chunk_rows: 100, chunks_per_stop: 10, pause_ms: 0 },
    ]);
    const found = await within(form).findByLabelText("Consistency", {}, { timeout: 5000 });
    expect(within(found).getByRole("alert").textContent).toBe("✕ It differs from a: 2 of 11 chunks.");
    const items = within(found).getByRole("row", { name: /^app\.items 10 1000 999/ });
    expect(within(items).getByText("chunk 3: id from 301 to before 401 · 100 rows on the source, 100 here")).toBeTruthy();
    expect(within(items).getByText("chunk 8: id from 801 to before 901 · 100 rows on the source, 99 here")).toBeTruthy();
    expect(within(found).getByRole("row", { name: "app.other 1 5 5 no" })).toBeTruthy();
  });

  it("refuses a chunk size out of bounds before sending anything, and shows a viewer no control", async () => {
    const { requests } = mockApi({ "GET /api/v1/clusters/1": () => ({ body: CLUSTER }) });
    const user = userEvent.setup();
    const { unmount } = renderSignedIn(<ConsistencyCheck clusterId={1} serverId={2} label="b" serverName={names} />, { role: "operator" });
    await user.click(await screen.findByRole("button", { name: "Check consistency with its source…" }));
    const form = await screen.findByRole("group", { name: "Check b against its source" });
    await user.clear(within(form).getByLabelText("Rows per chunk"));
    await user.type(within(form).getByLabelText("Rows per chunk"), "5");
    expect(within(form).getByText("Rows per chunk is a whole number from 10 to 1,000,000.")).toBeTruthy();
    expect((within(form).getByRole("button", { name: "Preview (dry run)" }) as HTMLButtonElement).disabled).toBe(true);
    expect(requests.filter((r) => r.method === "POST")).toEqual([]);
    unmount();
    renderSignedIn(<ConsistencyCheck clusterId={1} serverId={2} label="b" serverName={names} />, { role: "viewer" });
    await waitFor(() => expect(screen.queryByRole("button", { name: "Check consistency with its source…" })).toBeNull());
  });

  it("says a chunk's key range in words, for one-column and composite keys", () => {
    const chunk = (lower: (string | number)[] | null, upper: (string | number)[] | null) =>
      ({ index: 0, lower, upper, source_rows: 1, replica_rows: 1, position: "" });
    expect(chunkRange(["id"], chunk(null, [101]))).toBe("id below 101");
    expect(chunkRange(["id"], chunk([901], null))).toBe("id from 901 on");
    expect(chunkRange(["a", "b"], chunk(["x", 1], ["y", 2]))).toBe("(a, b) from (x, 1) to before (y, 2)");
    expect(chunkRange([], chunk(null, null))).toBe("the whole table");
  });
});

// "Rejoin as a replica…" on a fenced former master, against a fake backend: the dry run's exact request; a server
// with transactions the master never had gets them listed per domain (count, first and last GTID, time and tables)
// and no way to run; one with none can rejoin once the cluster's name is typed, with the run's exact request and its
// outcome; one with transactions only it has can be rewound instead (previewed again: the GTIDs that would be cut;
// the run's exact request, what it cut and the archive's id); a viewer sees no control.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { CLUSTER, operation, step } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { Rejoin } from "./Rejoin";

const ONLY_HERE = [
  { domain: 1, count: 3, first: "1-1-7", last: "1-1-9", reason: "seq_no 9 is beyond the master's newest GTID 1-2-6",
    transactions: [{ gtid: "1-1-9", commit_ts_us: 1_764_331_200_000_000, tables: ["app.orders"], rows: 1 }] },
];

function backend(onlyHere: typeof ONLY_HERE | []) {
  return mockApi({
    "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
    "POST /api/v1/clusters/1/operations/rejoin": (req) =>
      (req.body as { dry_run: boolean }).dry_run
        ? { status: 202, body: operation({ id: 1, type: "rejoin", dry_run: true } as never) }
        : { status: 202, body: operation({ id: 2, type: "rejoin", dry_run: false, state: "running" } as never) },
    "GET /api/v1/clusters/1/operations/1": () => ({
      body: operation({
        id: 1, type: "rejoin", dry_run: true, state: onlyHere.length ? "failed" : "succeeded",
        error: onlyHere.length ? "nothing was changed: a has transactions b never had — domain 1: 3 transaction(s)" : null,
        steps: [step("preflight", onlyHere.length ? "failed" : "passed")],
        result: { registered_server_id: 1, master_registered_server_id: 2, only_here: onlyHere },
      } as never),
    }),
    "GET /api/v1/clusters/1/operations/2": () => ({
      body: operation({
        id: 2, type: "rejoin", dry_run: false, state: "succeeded",
        steps: ["preflight", "pre_hooks", "read_only", "replicate", "verify", "unfence"].map((n) => step(n, "passed")),
        result: { registered_server_id: 1, master_registered_server_id: 2, connection: "main", only_here: [] },
      } as never),
    }),
  });
}

const names = (id: number) => ({ 1: "a (server_id 1)", 2: "b (server_id 2)" })[id] ?? `server ${id}`;

describe("rejoin a fenced former master", () => {
  it("lists the transactions only it has, and offers no run", async () => {
    const { requests } = backend(ONLY_HERE);
    const user = userEvent.setup();
    renderSignedIn(<Rejoin clusterId={1} serverId={1} label="a (server_id 1)" serverName={names} />, { role: "operator" });
    await user.click(await screen.findByRole("button", { name: "Rejoin as a replica…" }));
    const form = await screen.findByRole("group", { name: "Rejoin a (server_id 1) as a replica of the master" });
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    expect(requests.filter((r) => r.method === "POST").map((r) => [r.path, r.body])).toEqual([
      ["/api/v1/clusters/1/operations/rejoin", { dry_run: true, registered_server_id: 1 }],
    ]);
    const listed = await within(form).findByLabelText("Transactions only this server has", {}, { timeout: 5000 });
    expect(within(listed).getByRole("alert").textContent).toContain("It has transactions b (server_id 2) never had");
    const row = within(listed).getByRole("row", { name: /^1 3 1-1-7 1-1-9/ });
    expect(within(row).getByText("1-1-9 · 2025-11-28 12:00:00 UTC · app.orders")).toBeTruthy();
    expect(within(form).queryByRole("button", { name: "Rejoin" })).toBeNull();
  });

  it("rejoins once the cluster's name is typed, and says it replicates again", async () => {
    const { requests } = backend([]);
    const user = userEvent.setup();
    renderSignedIn(<Rejoin clusterId={1} serverId={1} label="a (server_id 1)" serverName={names} />, { role: "operator" });
    await user.click(await screen.findByRole("button", { name: "Rejoin as a replica…" }));
    const form = await screen.findByRole("group", { name: "Rejoin a (server_id 1) as a replica of the master" });
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    expect(await within(form).findByText("It has nothing b (server_id 2) lacks: it can rejoin as its replica.")).toBeTruthy();
    const run = within(form).getByRole("button", { name: "Rejoin" }) as HTMLButtonElement;
    expect(run.disabled).toBe(true);
    await user.type(within(form).getByLabelText(/Type the cluster name/), "prod-eu");
    await user.click(run);
    const posts = () => requests.filter((r) => r.method === "POST");
    await waitFor(() => expect(posts()).toHaveLength(2));
    expect(posts()[1]!.body).toEqual({ dry_run: false, registered_server_id: 1 });
    expect(posts()[1]!.headers.get("idempotency-key")).toBeTruthy();
    expect(
      await within(form).findByText("✓ It replicates from b (server_id 2) again, read-only, no longer fenced.", {}, { timeout: 5000 }),
    ).toBeTruthy();
  });

  it("offers a rewind when it has transactions only it has, previews what it cuts and says where the archive is", async () => {
    const cut = [{ domain: 1, gtids: ["1-1-7", "1-1-8", "1-1-9"] }];
    const rewound = { to: "1-2-6", cut, archive_name: "rewind-ferry-bin.000001-900-1.bin", archive_id: 7 };
    const only = { registered_server_id: 1, master_registered_server_id: 2, only_here: ONLY_HERE };
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "POST /api/v1/clusters/1/operations/rejoin": (req) => {
        const b = req.body as { dry_run: boolean; resolve?: string };
        const id = !b.resolve ? 1 : b.dry_run ? 3 : 4;
        return { status: 202, body: operation({ id, type: "rejoin", dry_run: b.dry_run, state: "running" } as never) };
      },
      "GET /api/v1/clusters/1/operations/1": () => ({
        body: operation({ id: 1, type: "rejoin", dry_run: true, state: "failed", error: "nothing was changed",
          steps: [step("preflight", "failed")], result: only } as never),
      }),
      "GET /api/v1/clusters/1/operations/3": () => ({
        body: operation({ id: 3, type: "rejoin", dry_run: true, state: "succeeded", steps: [step("preflight", "passed")],
          result: { ...only, rewind: { ...rewound, archive_name: null, archive_id: null } } } as never),
      }),
      "GET /api/v1/clusters/1/operations/4": () => ({
        body: operation({ id: 4, type: "rejoin", dry_run: false, state: "succeeded",
          steps: ["preflight", "pre_hooks", "read_only", "rewind", "archive", "replicate", "verify", "unfence"].map((n) => step(n, "passed")),
          result: { ...only, connection: "main", rewind: rewound } } as never),
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<Rejoin clusterId={1} serverId={1} label="a (server_id 1)" serverName={names} />, { role: "operator" });
    await user.click(await screen.findByRole("button", { name: "Rejoin as a replica…" }));
    const form = await screen.findByRole("group", { name: "Rejoin a (server_id 1) as a replica of the master" });
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    await user.click(await within(form).findByRole("button", { name: "Rewind (cut what only it has, archived first)" }, { timeout: 5000 }));
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    const preview = await within(form).findByLabelText("Rewind", {}, { timeout: 5000 });
    expect(within(preview).getByRole("row", { name: "1 3 1-1-7 … 1-1-9" })).toBeTruthy();
    expect(within(preview).getByText("Once rewound, it can rejoin as a replica of b (server_id 2).")).toBeTruthy();
    await user.type(within(form).getByLabelText(/Type the cluster name/), "prod-eu");
    await user.click(within(form).getByRole("button", { name: "Rejoin" }));
    const posts = () => requests.filter((r) => r.method === "POST").map((r) => r.body);
    await waitFor(() => expect(posts()).toHaveLength(3));
    expect(posts()).toEqual([
      { dry_run: true, registered_server_id: 1 },
      { dry_run: true, registered_server_id: 1, resolve: "rewind" },
      { dry_run: false, registered_server_id: 1, resolve: "rewind" },
    ]);
    const result = await within(form).findByRole("region", { name: "Result" }, { timeout: 5000 });
    await within(result).findByText("✓ Rewound; it replicates from b (server_id 2) again, read-only, no longer fenced.", {}, { timeout: 5000 });
    expect(within(result).getByText(/Archived first as archive 7/)).toBeTruthy();
    expect(within(result).getByText("GET /api/v1/clusters/1/archives/7")).toBeTruthy();
  });

  it("shows a viewer no control", async () => {
    backend([]);
    renderSignedIn(<Rejoin clusterId={1} serverId={1} label="a (server_id 1)" serverName={names} />, { role: "viewer" });
    await waitFor(() => expect(screen.queryByRole("button")).toBeNull());
  });
});

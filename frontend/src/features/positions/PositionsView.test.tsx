// The position matrix against a fake backend: each cell coloured by how far its server is behind in that domain,
// the most advanced starred, a legend naming the colours.
import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { forgetPositions, recordPosition } from "../../live/livePositions";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { PositionsView } from "./PositionsView";

const cell = (gtid: string, behind: number): Schemas["PositionCell"] => ({
  gtid, seq_no: Number(gtid.split("-")[2]), behind_transactions: behind, lag_seconds: null,
});
const row = (id: number, name: string, cells: Record<string, Schemas["PositionCell"]>): Schemas["PositionRow"] => ({
  registered_server_id: id, server_id: 10 + id, name, health: "healthy", gtid_current_pos: null, gtid_binlog_pos: null, cells, ahead_of_all: id === 1,
  root_of: [], ahead_in_own_domains: false,
});

const MATRIX: Schemas["PositionMatrix"] = {
  cluster_id: 1,
  domains: [1, 2],
  most_advanced: "1-1-1500,2-2-40",
  could_be_master: [1],
  rows: [
    row(1, "a", { "1": cell("1-1-1500", 0), "2": cell("2-2-35", 5) }),
    row(2, "b", { "1": cell("1-1-1450", 50), "2": cell("2-2-40", 0) }),
    row(3, "c", { "1": cell("1-1-200", 1300), "2": cell("2-2-40", 0) }),
  ],
};

describe("PositionsView", () => {
  it("colours each cell by transactions behind and stars the most advanced per domain", async () => {
    const { requests } = mockApi({ "GET /api/v1/clusters/1/positions": () => ({ body: MATRIX }) });
    renderSignedIn(<PositionsView clusterId={1} />, { role: "viewer" });
    const table = await screen.findByRole("table", { name: "Positions: servers by domains" });
    const cells = (name: string) =>
      within(within(table).getByRole("row", { name: new RegExp(`^${name} `) }))
        .getAllByRole("cell")
        .filter((td) => td.hasAttribute("data-behind"));
    expect(cells("a").map((td) => td.className)).toEqual(["cell-level behind-ahead", "cell-behind behind-b1"]);
    expect(cells("b").map((td) => td.className)).toEqual(["cell-behind behind-b10", "cell-level behind-ahead"]);
    expect(cells("c").map((td) => td.className)).toEqual(["cell-behind behind-b1000", "cell-level behind-ahead"]);
    expect(cells("c")[0]!.textContent).toBe("1-1-200▼ behind 1,300 txn");
    expect(cells("a")[0]!.textContent).toBe("1-1-1500★ most advanced");
    expect(screen.getByLabelText("Cell colours").textContent).toContain("★ most advanced in the domain");
    expect(requests.map((r) => r.path)).toEqual(["/api/v1/clusters/1/positions"]);
  });

  it("shows each row as the API read it — its time, the verdicts computed from it — whatever the stream said since", async () => {
    const delayed: Schemas["PositionMatrix"] = {
      ...MATRIX,
      rows: [
        { ...MATRIX.rows[0]!, last_seen_at: "2026-11-28T13:33:08Z" },
        {
          ...row(2, "d", {
            "1": { ...cell("1-1-1050", 450), lag_seconds: 30, lag: { seconds: 30, transactions: 450, delay_s: 30, beyond_delay_s: 0, level: "none", words: "30 s (delay 30 s, +0 s) · 450 txn" } },
          }),
          last_seen_at: "2026-11-28T13:33:07.5Z",
        },
      ],
    };
    // A position the event stream said, newer than the matrix: not laid over it (its verdicts would contradict it).
    recordPosition(1, { event: "position", registered_server_id: 2, domain: 1, gtid: "1-1-1600", seq_no: 1600 }, Date.now());
    mockApi({ "GET /api/v1/clusters/1/positions": () => ({ body: delayed }) });
    renderSignedIn(<PositionsView clusterId={1} />, { role: "viewer" });
    const table = await screen.findByRole("table", { name: "Positions: servers by domains" });
    const d = within(table).getByRole("row", { name: /^d / });
    expect(within(d).getByRole("rowheader").textContent).toBe("dread 2026-11-28 13:33:07 UTC");
    expect(d.querySelector("[data-behind]")?.textContent).toBe("1-1-1050▼ behind 450 txn · lag 30 s (delay 30 s, +0 s) · 450 txn");
    expect(d.lastElementChild?.textContent).toBe("no (behind in some domain)");
    forgetPositions(1);
  });

  it("says how far behind a replica is in a domain it replicates but has applied nothing of yet, and its lag", async () => {
    // A delayed replica's first half minute: nothing applied in domain 1, every transaction there still to come.
    const fresh: Schemas["PositionMatrix"] = {
      ...MATRIX,
      rows: [
        MATRIX.rows[0]!,
        row(2, "d", {
          "1": {
            gtid: null, seq_no: null, behind_transactions: 63, lag_seconds: 9,
            lag: { seconds: 9, transactions: 63, delay_s: 30, beyond_delay_s: 0, level: "none", words: "9.0 s (delay 30 s, +0 s) · 63 txn" },
          },
          "2": { gtid: null, seq_no: null, behind_transactions: 0, lag_seconds: null },
        }),
        // A master of domain 1 only (multi-source): the other domain is none of its business, however far it went.
        row(3, "m", {
          "1": cell("1-1-1500", 0),
          "2": { gtid: null, seq_no: null, behind_transactions: 40, lag_seconds: null },
        }),
      ],
    };
    mockApi({ "GET /api/v1/clusters/1/positions": () => ({ body: fresh }) });
    renderSignedIn(<PositionsView clusterId={1} />, { role: "viewer" });
    const table = await screen.findByRole("table", { name: "Positions: servers by domains" });
    const d = within(table).getByRole("row", { name: /^d / });
    const behind = d.querySelector("[data-behind]")!;
    expect(behind.getAttribute("data-behind")).toBe("63");
    expect(behind.className).toBe("cell-behind behind-b10");
    expect(behind.textContent).toBe("none▼ behind 63 txn · lag 9.0 s (delay 30 s, +0 s) · 63 txn");
    // A domain it has nothing of and is not behind in (none written there) stays a plain "none".
    expect(d.querySelectorAll("[data-behind]")).toHaveLength(1);
    expect(within(d).getAllByRole("cell").map((td) => td.textContent)).toContain("none");
    const m = within(table).getByRole("row", { name: /^m / });
    expect(within(m).getAllByRole("cell").slice(1, 3).map((td) => td.textContent)).toEqual(["1-1-1500★ most advanced", "none"]);
  });

  it("says a master of several could be master now of its own domains", async () => {
    const roots: Schemas["PositionMatrix"] = {
      ...MATRIX,
      could_be_master: [2, 3],
      rows: [
        { ...row(2, "s1", { "1": cell("1-1-1500", 0) }), ahead_of_all: false, root_of: [1], ahead_in_own_domains: true },
        { ...row(3, "s3", { "1": cell("1-1-1500", 0), "2": cell("2-2-40", 0) }), ahead_of_all: true },
        row(4, "s4", { "1": cell("1-1-1450", 50) }),
      ],
    };
    mockApi({ "GET /api/v1/clusters/1/positions": () => ({ body: roots }) });
    renderSignedIn(<PositionsView clusterId={1} />, { role: "viewer" });
    const table = await screen.findByRole("table", { name: "Positions: servers by domains" });
    const last = (name: string) =>
      within(table).getByRole("row", { name: new RegExp(`^${name} `) }).lastElementChild?.textContent;
    expect(last("s1")).toBe("✓ yes, of domain 1 (its own)");
    expect(last("s3")).toBe("✓ yes");
    expect(last("s4")).toBe("no (behind in some domain)");
  });
});

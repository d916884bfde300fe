// The global audit page against a fake backend: the exact filters asked for (actor, action, cluster, server, outcome,
// time), kept in the URL; rows typed — a dry run marked as such and linking its operation with its old → new master,
// a token change with no cluster, a refusal — each time in UTC with its zone; and the zone switched to local time.
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../api/client";
import { Layout } from "../components/Layout";
import { CLUSTER_OVERVIEW } from "../test/fixtures";
import { mockApi } from "../test/mockApi";
import { renderSignedIn } from "../test/render";
import { AuditPage } from "./AuditPage";

const entry = (over: Partial<Schemas["AuditEntryRead"]>): Schemas["AuditEntryRead"] => ({
  id: 1, at: "2026-11-28T13:33:08Z", actor: "alice", token_id: 1, action: "switchover", method: "POST",
  path: "/api/v1/clusters/1/operations/switchover", cluster_id: 1, outcome: "succeeded", status_code: 202,
  details: {}, registered_server_id: null, operation_id: null, kind: "change", operation: null, ...over,
});

const ROWS = [
  entry({
    id: 3, kind: "dry_run", operation_id: 12,
    operation: { id: 12, type: "switchover", dry_run: true, state: "succeeded", old_master: "a (server_id 1)", new_master: "b (server_id 2)" },
  }),
  entry({ id: 2, action: "create_token", path: "/api/v1/tokens", cluster_id: null, status_code: 201 }),
  entry({ id: 1, action: "update_cluster", method: "PATCH", path: "/api/v1/clusters/1", outcome: "denied", status_code: 403, kind: "refused", actor: "viewer-1" }),
];

function setup(url = "/audit") {
  const api = mockApi({
    "GET /api/v1/audit": () => ({ body: ROWS }),
    "GET /api/v1/clusters/overview": () => ({ body: [CLUSTER_OVERVIEW] }),
    "GET /api/v1/clusters/1/servers": () => ({ body: [{ id: 2, name: "b" }, { id: 3, name: "c" }] }),
  });
  renderSignedIn(
    <Layout>
      <AuditPage />
    </Layout>,
    { role: "viewer", url },
  );
  const audits = () => api.requests.filter((r) => r.path === "/api/v1/audit");
  return { audits };
}

describe("AuditPage", () => {
  it("types each row: a dry run marked and linked to its operation with old → new master, a token change, a refusal", async () => {
    setup();
    const table = await screen.findByRole("table", { name: "Audit log" });
    const rows = within(table).getAllByRole("row").slice(1);
    const cells = (i: number) => within(rows[i]!).getAllByRole("cell").map((c) => c.textContent);
    expect(cells(0)).toEqual([
      "2026-11-28 13:33:08 UTC", "alice", "◇ dry run", "Switchover", "prod-eu",
      "Switchover #12 (dry run) a (server_id 1) → b (server_id 2)now succeeded",
      "POST /api/v1/clusters/1/operations/switchover", "✓ succeeded (202)",
    ]);
    expect(within(rows[0]!).getByRole("link", { name: "Switchover #12" }).getAttribute("href")).toBe(
      "/clusters/1/operations#operation-12",
    );
    expect(cells(1).slice(2, 6)).toEqual(["✎ change", "Create token", "—", "—"]);
    expect(cells(2)[2]).toBe("✕ refused");
  });

  it("asks for exactly the filters chosen, and keeps them in the URL", async () => {
    const { audits } = setup("/audit?cluster=1");
    await screen.findByRole("table", { name: "Audit log" });
    expect(audits()[0]!.query.get("cluster_id")).toBe("1");
    const filters = screen.getByRole("search", { name: "Audit filters" });
    fireEvent.change(within(filters).getByLabelText("Actor"), { target: { value: "alice" } });
    fireEvent.change(within(filters).getByLabelText("Action"), { target: { value: "switchover" } });
    const server = await within(filters).findByRole("option", { name: "c" });
    fireEvent.change(within(filters).getByLabelText("Server"), { target: { value: server.getAttribute("value") } });
    fireEvent.change(within(filters).getByLabelText("Outcome"), { target: { value: "succeeded" } });
    const before = Date.now();
    fireEvent.change(within(filters).getByLabelText("When"), { target: { value: "24h" } });
    await waitFor(() => expect(audits().at(-1)!.query.get("since")).not.toBeNull());
    const asked = audits().at(-1)!.query;
    expect(Object.fromEntries([...asked.entries()].filter(([k]) => k !== "since"))).toEqual({
      cluster_id: "1", registered_server_id: "3", actor: "alice", action: "switchover", outcome: "succeeded", limit: "500",
    });
    const since = Date.parse(asked.get("since")!);
    expect(since).toBeGreaterThanOrEqual(before - 86_400_000 - 1000);
    expect(since).toBeLessThanOrEqual(Date.now() - 86_400_000 + 1000);
  });

  it("writes every time in the zone chosen, kept for the next visit", async () => {
    setup();
    await screen.findByRole("table", { name: "Audit log" });
    await userEvent.setup().selectOptions(screen.getByLabelText("Times in"), "local");
    expect(window.localStorage.getItem("ferry.timeZone")).toBe("local");
    const table = await screen.findByRole("table", { name: "Audit log" });
    const first = within(table).getAllByRole("row")[1]!;
    expect(within(first).getAllByRole("cell")[0]!.textContent).toMatch(/^2026-11-28 \d\d:33:08 (UTC|GMT[+-]\d+(:\d\d)?)$/);
    await userEvent.setup().selectOptions(screen.getByLabelText("Times in"), "utc");
    expect(window.localStorage.getItem("ferry.timeZone")).toBe("utc");
  });
});

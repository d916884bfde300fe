// The tokens page against a fake backend: every token listed with its role, dates and state; the active ones asked
// for first, another state or a search asked of the API, older ones a page at a time; a token created with the
// chosen role and an expiry counted from now, its secret shown once with a copy button; revoking asks first, then
// sends the revocation and says it was done; a viewer or operator never sees the page.
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { App } from "../App";
import { TOKEN_PAGE, type Token } from "../api/tokens";
import { me } from "../test/fixtures";
import { mockApi } from "../test/mockApi";
import { renderSignedIn } from "../test/render";
import { TokensPage } from "./TokensPage";

const token = (id: number, name: string, over: Partial<Token> = {}): Token => ({
  id, name, role: "viewer", display_prefix: `ferry_${name.slice(0, 4)}`, created_at: "2026-11-20T10:00:00Z",
  last_used_at: null, revoked_at: null, expires_at: null, ...over,
});

describe("TokensPage", () => {
  it("lists each token with its role, dates and state", async () => {
    mockApi({
      "GET /api/v1/tokens": () => ({
        body: [
          token(1, "test-admin", { role: "admin" }),
          token(2, "ci", { role: "operator", expires_at: "2099-01-01T00:00:00Z", last_used_at: "2026-11-25T08:00:00Z" }),
          token(3, "old", { expires_at: "2020-01-01T00:00:00Z" }),
          token(4, "gone", { revoked_at: "2026-11-21T00:00:00Z" }),
        ],
      }),
    });
    renderSignedIn(<TokensPage />, { role: "admin" });
    const table = await screen.findByRole("table", { name: "API tokens" });
    const row = (name: string) => within(table).getByRole("row", { name: new RegExp(`^${name}\\b`) });
    expect(row("test-admin").textContent).toContain("(signed in here)");
    expect(row("ci").textContent).toMatch(/operator.*ferry_ci….*active/);
    expect(row("ci").textContent).not.toContain("never");
    expect(row("old").textContent).toMatch(/never.*expired/);
    expect(row("gone").textContent).toContain("revoked");
    expect(within(row("gone")).queryByRole("button", { name: "Revoke" })).toBeNull();
  });

  it("asks for the active tokens first, then the chosen state and search, and older ones a page at a time", async () => {
    const { requests } = mockApi({
      "GET /api/v1/tokens": (r) => {
        const before = r.query.get("before_id");
        if (r.query.get("state") === "all" && before === null) {
          return { body: Array.from({ length: TOKEN_PAGE }, (_, i) => token(1000 - i, `t${1000 - i}`)) };
        }
        if (before !== null) return { body: [token(5, "oldest")] };
        return { body: [token(2, "ci")] };
      },
    });
    const user = userEvent.setup();
    renderSignedIn(<TokensPage />, { role: "admin" });
    expect(await screen.findByRole("rowheader", { name: "ci" })).toBeTruthy();
    const query = (i: number) => Object.fromEntries(requests[i]!.query);
    expect(query(0)).toEqual({ state: "active", limit: String(TOKEN_PAGE) });
    expect(screen.queryByRole("button", { name: "Older tokens" })).toBeNull(); // a short page is the last

    await user.type(screen.getByLabelText("Search"), "c");
    await waitFor(() => expect(requests.some((r) => r.query.get("q") === "c")).toBe(true));
    await user.clear(screen.getByLabelText("Search"));
    await user.selectOptions(screen.getByLabelText("Show"), "all");
    expect(await screen.findByRole("rowheader", { name: "t1000" })).toBeTruthy();
    await user.click(screen.getByRole("button", { name: "Older tokens" }));
    expect(await screen.findByRole("rowheader", { name: "oldest" })).toBeTruthy();
    const paged = requests.find((r) => r.query.get("before_id") !== null)!;
    expect(Object.fromEntries(paged.query)).toEqual({ state: "all", limit: String(TOKEN_PAGE), before_id: "901" });
    expect(screen.getAllByRole("rowheader")).toHaveLength(TOKEN_PAGE + 1);
    expect(screen.queryByRole("button", { name: "Older tokens" })).toBeNull();
  });

  it("says when nothing matches a filter", async () => {
    mockApi({ "GET /api/v1/tokens": () => ({ body: [] }) });
    const user = userEvent.setup();
    renderSignedIn(<TokensPage />, { role: "admin" });
    expect(await screen.findByText("No active tokens.")).toBeTruthy();
    await user.selectOptions(screen.getByLabelText("Show"), "revoked");
    expect(await screen.findByText("No token matches.")).toBeTruthy();
  });

  it("creates a token with a role and an expiry, and shows its secret once with a copy button", async () => {
    const { requests } = mockApi({
      "GET /api/v1/tokens": () => ({ body: [] }),
      "POST /api/v1/tokens": (r) => ({
        status: 201,
        body: { ...token(5, "ci", r.body as Partial<Token>), token: "ferry_ci-secret-0123456789" },
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<TokensPage />, { role: "admin" });
    expect(await screen.findByText("No active tokens.")).toBeTruthy();
    await user.type(screen.getByLabelText("Name"), "ci");
    await user.selectOptions(screen.getByLabelText("Role"), "operator");
    await user.selectOptions(screen.getByLabelText("Expires in"), "7 days");
    const before = Date.now();
    await user.click(screen.getByRole("button", { name: "Create token" }));

    const secret = await screen.findByLabelText("Secret of ci");
    expect((secret as HTMLInputElement).value).toBe("ferry_ci-secret-0123456789");
    const sent = requests.find((r) => r.method === "POST")!.body as { name: string; role: string; expires_at: string };
    expect(sent.name).toBe("ci");
    expect(sent.role).toBe("operator");
    const lifetime = Date.parse(sent.expires_at) - before;
    expect(lifetime).toBeGreaterThanOrEqual(7 * 86_400_000);
    expect(lifetime).toBeLessThan(8 * 86_400_000);

    await user.click(screen.getByRole("button", { name: "Copy" }));
    // user-event stands in for the browser's clipboard.
    expect(await navigator.clipboard.readText()).toBe("ferry_ci-secret-0123456789");
    expect((await screen.findByRole("status")).textContent).toMatch(/Copied/);
    await user.click(screen.getByRole("button", { name: "Done" }));
    expect(screen.queryByLabelText("Secret of ci")).toBeNull();
  });

  it("revokes a token only after a confirmation", async () => {
    const { requests } = mockApi({
      "GET /api/v1/tokens": () => ({ body: [token(2, "ci")] }),
      "POST /api/v1/tokens/2/revoke": () => ({ body: token(2, "ci", { revoked_at: "2026-11-26T12:00:00Z" }) }),
    });
    const user = userEvent.setup();
    renderSignedIn(<TokensPage />, { role: "admin" });
    await user.click(await screen.findByRole("button", { name: "Revoke" }));
    expect(requests.some((r) => r.method === "POST")).toBe(false);
    await user.click(screen.getByRole("button", { name: "Revoke ci" }));
    await waitFor(() => expect(requests.filter((r) => r.path === "/api/v1/tokens/2/revoke")).toHaveLength(1));
    expect((await screen.findByRole("status")).textContent).toBe("Revoked ci (listed under Revoked).");
  });

  it.each(["viewer", "operator"] as const)("is neither linked nor shown for a %s", async (role) => {
    window.localStorage.setItem("ferry.session", JSON.stringify({ token: "ferry_x", expiresAt: null }));
    window.history.pushState({}, "", "/tokens");
    mockApi({
      "GET /api/v1/me": () => ({ body: me(role) }),
      "GET /api/v1/tokens": () => ({ status: 403, body: { error: { code: "forbidden", message: "admin only" } } }),
    });
    render(<App />);
    expect(await screen.findByText("Only an admin token manages API tokens.")).toBeTruthy();
    expect(screen.queryByRole("link", { name: "Tokens" })).toBeNull();
    window.history.pushState({}, "", "/");
  });
});

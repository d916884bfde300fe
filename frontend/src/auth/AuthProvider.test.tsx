// The session kept across tabs: a sign-in is kept with the token's expiry and opens every later page signed in; a
// check of the kept token that gets no answer is not a refusal (the session stays, with a way to try again), a 401
// forgets it; an expired one is never sent; signing out in one tab signs out the others, and the expiry signs out
// an idle page.
import { QueryClientProvider } from "@tanstack/react-query";
import { act, render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { makeQueryClient } from "../App";
import { ApiError } from "../api/client";
import { SignInPage } from "../pages/SignInPage";
import { me } from "../test/fixtures";
import { AuthProvider, useAuth } from "./AuthProvider";
import type { fetchMe } from "./role";

const KEY = "ferry.session";

function keep(token: string, expiresAt: string | null = null) {
  window.localStorage.setItem(KEY, JSON.stringify({ token, expiresAt }));
}

function Probe() {
  const { state, name, signOut } = useAuth();
  if (state.status !== "signed-in") return <SignInPage />;
  return (
    <p>
      signed in as {name}{" "}
      <button type="button" onClick={() => signOut()}>
        Sign out
      </button>
    </p>
  );
}

function renderTab(whoAmI: typeof fetchMe) {
  return render(
    <QueryClientProvider client={makeQueryClient()}>
      <AuthProvider whoAmI={whoAmI}>
        <Probe />
      </AuthProvider>
    </QueryClientProvider>,
  );
}

/** What a browser does in the other tabs when this one changes localStorage. */
function otherTabWrote(newValue: string | null) {
  act(() => {
    window.dispatchEvent(new StorageEvent("storage", { key: KEY, newValue, storageArea: window.localStorage }));
  });
}

describe("the kept session", () => {
  it("keeps a sign-in with the token's expiry, and a later page starts signed in from it", async () => {
    const expires = new Date(Date.now() + 3_600_000).toISOString();
    const whoAmI = vi.fn(async () => me("admin", "alice", expires));
    const user = userEvent.setup();
    const first = renderTab(whoAmI);
    await user.type(screen.getByLabelText("API token"), "ferry_alice");
    await user.click(screen.getByRole("button", { name: "Sign in" }));
    expect(await screen.findByText(/signed in as alice/)).toBeTruthy();
    expect(JSON.parse(window.localStorage.getItem(KEY)!)).toEqual({ token: "ferry_alice", expiresAt: expires });
    first.unmount();

    renderTab(whoAmI);
    expect(await screen.findByText(/signed in as alice/)).toBeTruthy();
    expect(whoAmI).toHaveBeenLastCalledWith("ferry_alice");
  });

  it("keeps the session when its check gets no answer (the page left, the network down), and tries again", async () => {
    keep("ferry_kept");
    const whoAmI = vi
      .fn<typeof fetchMe>()
      .mockRejectedValueOnce(new ApiError(0, "network", "the API could not be reached: Failed to fetch"))
      .mockResolvedValueOnce(me("viewer", "kept"));
    const user = userEvent.setup();
    renderTab(whoAmI);
    expect((await screen.findByRole("alert")).textContent).toMatch(/Could not check the kept sign-in/);
    expect(JSON.parse(window.localStorage.getItem(KEY)!).token).toBe("ferry_kept");
    await user.click(screen.getByRole("button", { name: "Try again" }));
    expect(await screen.findByText(/signed in as kept/)).toBeTruthy();
  });

  it("forgets a kept token the API refuses", async () => {
    keep("ferry_revoked");
    renderTab(async () => {
      throw new ApiError(401, "unauthorized", "API token 'x' was revoked");
    });
    expect((await screen.findByRole("alert")).textContent).toMatch(/does not know this token/);
    expect(window.localStorage.getItem(KEY)).toBeNull();
  });

  it("never sends an expired kept token", async () => {
    keep("ferry_old", "2020-01-01T00:00:00Z");
    const whoAmI = vi.fn(async () => me("viewer"));
    renderTab(whoAmI);
    expect(screen.getByLabelText("API token")).toBeTruthy();
    expect(whoAmI).not.toHaveBeenCalled();
    expect(window.localStorage.getItem(KEY)).toBeNull();
  });

  it("signs out everywhere: its own sign-out forgets the session, another tab's signs this one out", async () => {
    keep("ferry_shared");
    const user = userEvent.setup();
    renderTab(async () => me("operator", "shared"));
    await user.click(await screen.findByRole("button", { name: "Sign out" }));
    expect(window.localStorage.getItem(KEY)).toBeNull();
    expect(screen.getByRole("status").textContent).toMatch(/Signed out, in every tab/);

    // Another tab signs in: this one follows; then it signs out: this one too.
    keep("ferry_shared");
    otherTabWrote(JSON.stringify({ token: "ferry_shared", expiresAt: null }));
    expect(await screen.findByText(/signed in as shared/)).toBeTruthy();
    window.localStorage.removeItem(KEY);
    otherTabWrote(null);
    expect((await screen.findByRole("status")).textContent).toMatch(/Signed out in another tab/);
  });

  it("signs an idle page out when the token expires", async () => {
    const expires = new Date(Date.now() + 300).toISOString();
    keep("ferry_brief", expires);
    renderTab(async () => me("viewer", "brief", expires));
    expect(await screen.findByText(/signed in as brief/)).toBeTruthy();
    await waitFor(() => expect(screen.getByRole("alert").textContent).toMatch(/The token expired/), { timeout: 10_000 });
    expect(window.localStorage.getItem(KEY)).toBeNull();
  });
});

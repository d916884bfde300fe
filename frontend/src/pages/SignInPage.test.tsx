// Signing in through the whole app against a fake backend: the token is checked (its name and role read from
// GET /api/v1/me), kept in localStorage for every tab, sent as a bearer token, and a refused token says so.
import { screen } from "@testing-library/react";
import { render } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { App } from "../App";
import { CLUSTER_OVERVIEW, me } from "../test/fixtures";
import { mockApi } from "../test/mockApi";

describe("sign-in", () => {
  it("signs in, follows the token's role and sends it as bearer", async () => {
    const { requests } = mockApi({
      "GET /api/v1/me": () => ({ body: me("viewer", "ro") }),
      "GET /api/v1/clusters/overview": () => ({ body: [CLUSTER_OVERVIEW] }),
    });
    const user = userEvent.setup();
    render(<App />);
    await user.type(screen.getByLabelText("API token"), "ferry_viewer-token");
    await user.click(screen.getByRole("button", { name: "Sign in" }));

    expect(await screen.findByRole("link", { name: "prod-eu" })).toBeTruthy();
    expect(screen.getByLabelText("Signed in as viewer").textContent).toMatch(/^ro · role: viewer/);
    expect(JSON.parse(window.localStorage.getItem("ferry.session")!)).toEqual({ token: "ferry_viewer-token", expiresAt: null });
    const whoAmI = requests.find((r) => r.path === "/api/v1/me")!;
    expect(whoAmI.headers.get("Authorization")).toBe("Bearer ferry_viewer-token");
    const list = requests.find((r) => r.path === "/api/v1/clusters/overview")!;
    expect(list.headers.get("Authorization")).toBe("Bearer ferry_viewer-token");
  });

  it("says when the API does not know the token", async () => {
    mockApi({ "GET /api/v1/me": () => ({ status: 401, body: { error: { code: "unauthorized", message: "unknown API token" } } }) });
    const user = userEvent.setup();
    render(<App />);
    await user.type(screen.getByLabelText("API token"), "ferry_wrong");
    await user.click(screen.getByRole("button", { name: "Sign in" }));
    expect((await screen.findByRole("alert")).textContent).toMatch(/does not know this token/);
    expect(window.localStorage.getItem("ferry.session")).toBeNull();
  });
});

// Tests of role rules and of learning a token's name and role from GET /api/v1/me.
import { describe, expect, it } from "vitest";
import { me } from "../test/fixtures";
import { mockApi } from "../test/mockApi";
import { canOperate, fetchMe, roleAllows } from "./role";

describe("roleAllows", () => {
  it("orders viewer < operator < admin", () => {
    expect(roleAllows("viewer", "operator")).toBe(false);
    expect(roleAllows("operator", "operator")).toBe(true);
    expect(roleAllows("admin", "operator")).toBe(true);
    expect(roleAllows("operator", "admin")).toBe(false);
    expect(roleAllows(null, "viewer")).toBe(false);
    expect(canOperate("viewer")).toBe(false);
    expect(canOperate("admin")).toBe(true);
  });
});

describe("fetchMe", () => {
  it("asks GET /api/v1/me with the token being signed in and answers who it is", async () => {
    const { requests } = mockApi({ "GET /api/v1/me": () => ({ body: me("operator", "ci") }) });
    expect(await fetchMe("ferry_abc")).toEqual({ name: "ci", role: "operator", capabilities: ["can_read", "can_operate"], expires_at: null });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.headers.get("Authorization")).toBe("Bearer ferry_abc");
  });

  it.each(["viewer", "operator", "admin"] as const)("follows the role the backend names (%s)", async (role) => {
    mockApi({ "GET /api/v1/me": () => ({ body: me(role) }) });
    expect((await fetchMe("t")).role).toBe(role);
  });

  it("rejects an unknown token", async () => {
    mockApi({ "GET /api/v1/me": () => ({ status: 401, body: { error: { code: "unauthorized", message: "unknown API token" } } }) });
    await expect(fetchMe("t")).rejects.toMatchObject({ status: 401, message: "unknown API token" });
  });

  it("rejects an answer without a role rather than guess one", async () => {
    mockApi({ "GET /api/v1/me": () => ({ body: { name: "x", role: "root", capabilities: [] } }) });
    await expect(fetchMe("t")).rejects.toMatchObject({ code: "unexpected" });
  });
});

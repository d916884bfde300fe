// Tests of role rules and of learning a token's role from the backend (200 for admins, the 403's message else).
import { describe, expect, it } from "vitest";
import { mockApi } from "../test/mockApi";
import { canOperate, probeRole, roleAllows, roleFromForbidden } from "./role";

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

describe("roleFromForbidden", () => {
  it("reads the role out of the backend's message", () => {
    expect(roleFromForbidden("token 'ci' has role operator; this needs admin")).toBe("operator");
    expect(roleFromForbidden("forbidden")).toBeNull();
  });
});

describe("probeRole", () => {
  const forbidden = (role: string) => () => ({
    status: 403,
    body: { error: { code: "forbidden", message: `token 'x' has role ${role}; this needs admin` } },
  });

  it("asks GET /api/v1/tokens with the token being signed in", async () => {
    const { requests } = mockApi({ "GET /api/v1/tokens": () => ({ body: [] }) });
    expect(await probeRole("ferry_abc")).toBe("admin");
    expect(requests[0]!.headers.get("Authorization")).toBe("Bearer ferry_abc");
  });

  it("finds operator and viewer from the 403", async () => {
    mockApi({ "GET /api/v1/tokens": forbidden("operator") });
    expect(await probeRole("t")).toBe("operator");
    mockApi({ "GET /api/v1/tokens": forbidden("viewer") });
    expect(await probeRole("t")).toBe("viewer");
  });

  it("takes an unclear 403 as viewer, the least role", async () => {
    mockApi({ "GET /api/v1/tokens": () => ({ status: 403, body: { error: { code: "forbidden", message: "no" } } }) });
    expect(await probeRole("t")).toBe("viewer");
  });

  it("rejects an unknown token", async () => {
    mockApi({ "GET /api/v1/tokens": () => ({ status: 401, body: { error: { code: "unauthorized", message: "unknown token" } } }) });
    await expect(probeRole("t")).rejects.toMatchObject({ status: 401, message: "unknown token" });
  });
});

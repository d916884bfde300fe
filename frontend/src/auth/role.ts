// Roles and what each may do, and how the dashboard learns the signed-in token's role. The backend has no
// "who am I" endpoint yet, so the role is probed: GET /api/v1/tokens (admin only, read-only, not audited) answers
// 200 for an admin; its 403 names the caller's role ("… has role viewer; this needs admin"). Anything unclear is
// taken as the least role, viewer: a control is never shown to someone who may not use it.
import { ApiError, api, toApiError, type Role } from "../api/client";

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** Whether `role` may do what `needed` may do. */
export function roleAllows(role: Role | null | undefined, needed: Role): boolean {
  return role != null && RANK[role] >= RANK[needed];
}

/** Operators and admins change clusters; viewers only read. */
export function canOperate(role: Role | null | undefined): boolean {
  return roleAllows(role, "operator");
}

/** The role named in the backend's 403 message, if it names one. */
export function roleFromForbidden(message: string): Role | null {
  const match = /has role (viewer|operator|admin)\b/.exec(message);
  return match ? (match[1] as Role) : null;
}

/** Asks the backend which role `token` has. Throws ApiError(401) for a token it does not know. */
export async function probeRole(token: string): Promise<Role> {
  const { response, error } = await api.GET("/api/v1/tokens", {
    headers: { Authorization: `Bearer ${token}` },
  });
  if (response.ok) return "admin";
  const failure = toApiError(response.status, error);
  if (response.status === 403) return roleFromForbidden(failure.message) ?? "viewer";
  throw failure instanceof ApiError ? failure : new ApiError(response.status, "unknown", String(error));
}

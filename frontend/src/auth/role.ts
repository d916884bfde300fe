// Roles and what each may do, and how the dashboard learns the signed-in token's role: GET /api/v1/me (any valid
// token) answers its name, role and capabilities. The UI follows the role; a control is never shown to someone
// who may not use it.
import { ApiError, api, unwrap, type Role, type Schemas } from "../api/client";

export type Me = Schemas["Me"];

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** Whether `role` may do what `needed` may do. */
export function roleAllows(role: Role | null | undefined, needed: Role): boolean {
  return role != null && RANK[role] >= RANK[needed];
}

/** Operators and admins change clusters; viewers only read. */
export function canOperate(role: Role | null | undefined): boolean {
  return roleAllows(role, "operator");
}

/** Asks the backend who `token` is. Throws ApiError(401) for a token it does not know (or has revoked). */
export async function fetchMe(token: string): Promise<Me> {
  const me = await unwrap(api.GET("/api/v1/me", { headers: { Authorization: `Bearer ${token}` } }));
  if (!me || !Object.hasOwn(RANK, me.role)) {
    throw new ApiError(0, "unexpected", "the API answered GET /api/v1/me without a known role");
  }
  return me;
}

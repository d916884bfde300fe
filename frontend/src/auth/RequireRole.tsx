// Renders its children only for a token whose role allows them: a viewer never sees a control that changes state.
import type { ReactNode } from "react";
import type { Role } from "../api/client";
import { useAuth } from "./AuthProvider";
import { roleAllows } from "./role";

export function RequireRole({ role, children, fallback = null }: { role: Role; children: ReactNode; fallback?: ReactNode }) {
  const { role: current } = useAuth();
  return <>{roleAllows(current, role) ? children : fallback}</>;
}

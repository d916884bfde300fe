// The page frame: a skip link, the header (home link, collector health, the tokens page for admins, the token's name
// and role, sign out) and the main region.
import type { ReactNode } from "react";
import { Link } from "react-router-dom";
import { useAuth } from "../auth/AuthProvider";
import { RequireRole } from "../auth/RequireRole";

export function Layout({ children }: { children: ReactNode }) {
  const { role, name, signOut } = useAuth();
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="app-header">
        <Link to="/" className="brand">
          Ferry
        </Link>
        <span className="muted">replication control plane</span>
        <Link to="/collector">Collector health</Link>
        <RequireRole role="admin">
          <Link to="/tokens">Tokens</Link>
        </RequireRole>
        <span className="spacer" />
        <span className="role" aria-label={`Signed in as ${role ?? "unknown"}`}>
          {name ? <span className="muted">{name} · </span> : null}
          role: <strong>{role}</strong>
          {role === "viewer" ? <span className="muted"> (read only)</span> : null}
        </span>
        <button type="button" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

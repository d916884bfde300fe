// The page frame: a skip link, the header (home link, collector health, the audit log, the tokens page for admins,
// the time zone every time is written in, the token's name and role, sign out) and the main region (drawn again when
// the time zone changes, so every time on the page follows it).
import { useState, type ReactNode } from "react";
import { Link } from "react-router-dom";
import { useAuth } from "../auth/AuthProvider";
import { RequireRole } from "../auth/RequireRole";
import { setZoneChoice, zoneChoice, type ZoneChoice } from "../lib/timeZone";

export function Layout({ children }: { children: ReactNode }) {
  const { role, name, signOut } = useAuth();
  const [zone, setZone] = useState<ZoneChoice>(zoneChoice);
  const chooseZone = (choice: ZoneChoice) => {
    setZoneChoice(choice);
    setZone(choice);
  };
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
        <Link to="/audit">Audit log</Link>
        <RequireRole role="admin">
          <Link to="/tokens">Tokens</Link>
        </RequireRole>
        <span className="spacer" />
        <label className="zone-choice">
          Times in{" "}
          <select value={zone} onChange={(e) => chooseZone(e.target.value === "local" ? "local" : "utc")}>
            <option value="utc">UTC</option>
            <option value="local">local time</option>
          </select>
        </label>
        <span className="role" aria-label={`Signed in as ${role ?? "unknown"}`}>
          {name ? <span className="muted">{name} · </span> : null}
          role: <strong>{role}</strong>
          {role === "viewer" ? <span className="muted"> (read only)</span> : null}
        </span>
        <button type="button" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1} key={zone}>
        {children}
      </main>
    </>
  );
}

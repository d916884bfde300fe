// Create an API token: a unique name, a role and a lifetime (30 days unless chosen otherwise); the secret the
// answer holds is handed to `onCreated`, to be shown once.
import { useState, type FormEvent } from "react";
import type { Role } from "../../api/client";
import { useCreateToken, type TokenCreated } from "../../api/tokens";
import { ErrorMessage } from "../../components/QueryState";
import { DEFAULT_LIFETIME, expiresAt, LIFETIMES } from "./tokenExpiry";

const ROLES: readonly Role[] = ["viewer", "operator", "admin"];

export function CreateTokenForm({ onCreated }: { onCreated: (token: TokenCreated) => void }) {
  const create = useCreateToken();
  const [name, setName] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const [lifetime, setLifetime] = useState(DEFAULT_LIFETIME);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const chosen = LIFETIMES.find((l) => l.label === lifetime)!;
    create.mutate(
      { name: name.trim(), role, expires_at: expiresAt(chosen) },
      {
        onSuccess: (token) => {
          setName("");
          onCreated(token);
        },
      },
    );
  };

  return (
    <form onSubmit={submit} aria-label="Create a token">
      <fieldset>
        <legend>Create a token</legend>
        <label>
          Name <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} placeholder="ci, alice-laptop…" />
        </label>{" "}
        <label>
          Role{" "}
          <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>{" "}
        <label>
          Expires in{" "}
          <select value={lifetime} onChange={(e) => setLifetime(e.target.value)}>
            {LIFETIMES.map((l) => (
              <option key={l.label} value={l.label}>
                {l.label}
              </option>
            ))}
          </select>
        </label>{" "}
        <button type="submit" disabled={create.isPending || !name.trim()}>
          {create.isPending ? "Creating…" : "Create token"}
        </button>
        <p className="small muted">A viewer reads; an operator also changes clusters, runs operations and drills; an admin also manages tokens.</p>
        {create.error ? <ErrorMessage error={create.error} /> : null}
      </fieldset>
    </form>
  );
}

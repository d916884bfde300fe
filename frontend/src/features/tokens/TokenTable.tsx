// The API tokens: name, role, the secret's first characters, when created, until when, when last used, and their
// state; an active one can be revoked after a confirmation (the token signed in here says so: revoking it signs out),
// and the page then says so (a list of active tokens no longer shows it).
import { useAuth } from "../../auth/AuthProvider";
import { useRevokeToken, type Token } from "../../api/tokens";
import { ConfirmButton } from "../../components/ConfirmButton";
import { ErrorMessage } from "../../components/QueryState";
import { Badge } from "../../components/StatusBadge";
import { formatTime } from "../../lib/format";
import { tokenState } from "./tokenExpiry";

export function TokenTable({ tokens, empty = "No active tokens." }: { tokens: readonly Token[]; empty?: string }) {
  const revoke = useRevokeToken();
  const { name: signedInAs } = useAuth();
  const revoked = revoke.isSuccess && revoke.data ? (
    <p role="status" className="small">{`Revoked ${revoke.data.name} (listed under Revoked).`}</p>
  ) : null;
  if (tokens.length === 0)
    return (
      <>
        {revoked}
        <p className="muted">{empty}</p>
      </>
    );
  return (
    <>
      {revoke.error ? <ErrorMessage error={revoke.error} /> : null}
      {revoked}
      <div className="scroll-x">
        <table className="data" aria-label="API tokens">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col">Starts with</th>
              <th scope="col">Created</th>
              <th scope="col">Expires</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {tokens.map((token) => {
              const state = tokenState(token);
              const mine = token.name === signedInAs;
              return (
                <tr key={token.id}>
                  <th scope="row">
                    {token.name}
                    {mine ? <span className="muted small"> (signed in here)</span> : null}
                  </th>
                  <td>{token.role}</td>
                  <td className="mono small">{token.display_prefix}…</td>
                  <td>{formatTime(token.created_at)}</td>
                  <td>{token.expires_at ? formatTime(token.expires_at) : "never"}</td>
                  <td>{token.last_used_at ? formatTime(token.last_used_at) : "never"}</td>
                  <td>
                    {state === "active" ? (
                      <Badge tone="ok" symbol="✓">active</Badge>
                    ) : state === "expired" ? (
                      <Badge tone="warn" symbol="⏱">expired</Badge>
                    ) : (
                      <Badge tone="bad" symbol="✕">{`revoked ${formatTime(token.revoked_at)}`}</Badge>
                    )}
                  </td>
                  <td>
                    {token.revoked_at ? null : (
                      <ConfirmButton
                        label="Revoke"
                        confirmLabel={mine ? `Revoke ${token.name} (signs you out)` : `Revoke ${token.name}`}
                        disabled={revoke.isPending}
                        onConfirm={() => revoke.mutate(token.id)}
                      />
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}

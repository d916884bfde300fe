// The API tokens page (admins): create a token with a role and a lifetime (its secret shown once); the tokens, newest
// first — the active ones unless another state is chosen, searched by name or first characters, older ones a page at
// a time — with their dates and state; revoke one.
import { useDeferredValue, useState } from "react";
import { useTokens, type TokenCreated, type TokenState } from "../api/tokens";
import { QueryState } from "../components/QueryState";
import { CreateTokenForm } from "../features/tokens/CreateTokenForm";
import { NewTokenSecret } from "../features/tokens/NewTokenSecret";
import { TokenTable } from "../features/tokens/TokenTable";

const STATES: readonly { value: TokenState; label: string }[] = [
  { value: "active", label: "Active" },
  { value: "expired", label: "Expired" },
  { value: "revoked", label: "Revoked" },
  { value: "all", label: "All" },
];

export function TokensPage() {
  const [state, setState] = useState<TokenState>("active");
  const [search, setSearch] = useState("");
  const tokens = useTokens(state, useDeferredValue(search.trim()));
  const [created, setCreated] = useState<TokenCreated | null>(null);
  const rows = tokens.data?.pages.flat() ?? [];
  const empty = state === "active" && search.trim() === "" ? "No active tokens." : "No token matches.";
  return (
    <>
      <h1>API tokens</h1>
      <p className="small muted">
        Each person, dashboard or script gets its own token with the least role it needs and an expiry; revoke what is no
        longer used (docs/security.md).
      </p>
      {created ? <NewTokenSecret token={created} onDone={() => setCreated(null)} /> : null}
      <CreateTokenForm onCreated={setCreated} />
      <div className="filters" role="search" aria-label="Filter tokens">
        <label>
          Show{" "}
          <select value={state} onChange={(e) => setState(e.target.value as TokenState)}>
            {STATES.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </label>{" "}
        <label>
          Search{" "}
          <input
            type="search"
            value={search}
            maxLength={100}
            placeholder="name or first characters"
            onChange={(e) => setSearch(e.target.value)}
          />
        </label>
      </div>
      <QueryState isPending={tokens.isPending} error={tokens.error} what="tokens">
        {tokens.data ? (
          <TokenTable tokens={rows} empty={empty} />
        ) : null}
        {tokens.hasNextPage ? (
          <button type="button" disabled={tokens.isFetchingNextPage} onClick={() => void tokens.fetchNextPage()}>
            Older tokens
          </button>
        ) : null}
      </QueryState>
    </>
  );
}

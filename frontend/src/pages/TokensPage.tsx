// The API tokens page (admins): create a token with a role and a lifetime (its secret shown once), see every token
// with its dates and state, revoke one.
import { useState } from "react";
import { useTokens, type TokenCreated } from "../api/tokens";
import { QueryState } from "../components/QueryState";
import { CreateTokenForm } from "../features/tokens/CreateTokenForm";
import { NewTokenSecret } from "../features/tokens/NewTokenSecret";
import { TokenTable } from "../features/tokens/TokenTable";

export function TokensPage() {
  const tokens = useTokens();
  const [created, setCreated] = useState<TokenCreated | null>(null);
  return (
    <>
      <h1>API tokens</h1>
      <p className="small muted">
        Each person, dashboard or script gets its own token with the least role it needs and an expiry; revoke what is no
        longer used (docs/security.md).
      </p>
      {created ? <NewTokenSecret token={created} onDone={() => setCreated(null)} /> : null}
      <CreateTokenForm onCreated={setCreated} />
      <QueryState isPending={tokens.isPending} error={tokens.error} what="tokens">
        {tokens.data ? <TokenTable tokens={tokens.data} /> : null}
      </QueryState>
    </>
  );
}

// Sign-in with an API token: the role is asked of the backend, the token kept for every tab of this browser until it
// expires or someone signs out; says why a session ended, and offers to check a kept one again when it could not be.
import { useState, type FormEvent } from "react";
import { useAuth } from "../auth/AuthProvider";

export function SignInPage() {
  const { state, signIn, retry } = useAuth();
  const [token, setToken] = useState("");
  const checking = state.status === "checking";
  const reason = state.status === "signed-out" ? state.reason : undefined;
  const notice = state.status === "signed-out" ? state.notice : undefined;
  const kept = state.status === "signed-out" && state.kept === true;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (token.trim()) signIn(token).catch(() => undefined);
  };

  return (
    <main id="main" className="sign-in">
      <h1>Ferry</h1>
      <p className="muted">Sign in with an API token (create one with `python -m ferry_control.cli create-token`).</p>
      <form onSubmit={submit} aria-describedby={reason ? "sign-in-error" : undefined}>
        <label htmlFor="api-token">API token</label>
        <input
          id="api-token"
          name="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={token}
          onChange={(e) => setToken(e.target.value)}
          placeholder="ferry_…"
          required
          autoFocus
        />
        <button type="submit" disabled={checking || !token.trim()}>
          {checking ? "Checking…" : "Sign in"}
        </button>
      </form>
      {reason ? (
        <p id="sign-in-error" role="alert" className="error">
          <span aria-hidden="true">✕ </span>
          {reason}
          {kept ? (
            <>
              {" "}
              <button type="button" onClick={retry}>
                Try again
              </button>
            </>
          ) : null}
        </p>
      ) : null}
      {notice ? (
        <p role="status" className="muted">
          {notice}
        </p>
      ) : null}
    </main>
  );
}

// The signed-in token and who it is for the whole page: sign in (ask GET /api/v1/me, keep the token and its expiry
// for every tab of the browser, tokenStore.ts), sign out (from the header, on any 401, at the token's expiry, and
// whenever another tab signs out), and the role the UI follows. A check of the kept token that does not get an
// answer (the page left, the network down) is not a refusal: the session stays kept.
import { useQueryClient } from "@tanstack/react-query";
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { ApiError, onUnauthorized, setTokenSource, type Role } from "../api/client";
import { formatTime } from "../lib/format";
import { fetchMe, type Me } from "./role";
import { onSessionChangedElsewhere, readSession, writeSession } from "./tokenStore";

export type AuthState =
  /** `reason`: why, as an error; `notice`: what happened, as news; `kept`: a session is kept that could not be checked. */
  | { status: "signed-out"; reason?: string; notice?: string; kept?: boolean }
  | { status: "checking"; token: string }
  | { status: "signed-in"; token: string; me: Me };

interface AuthContextValue {
  state: AuthState;
  role: Role | null;
  /** The signed-in token's name. */
  name: string | null;
  signIn: (token: string) => Promise<void>;
  /** Signs out this tab and every other one (the kept session is forgotten). */
  signOut: (reason?: string) => void;
  /** Checks the kept session again (after it could not be checked). */
  retry: () => void;
}

const AuthContext = createContext<AuthContextValue | null>(null);

/** setTimeout's longest delay; a later expiry is waited for in steps. */
const TIMER_MAX_MS = 2 ** 31 - 1;

let currentToken: string | null = null;
setTokenSource(() => currentToken);

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function AuthProvider({ children, whoAmI = fetchMe }: { children: ReactNode; whoAmI?: typeof fetchMe }) {
  const queryClient = useQueryClient();
  const [initial] = useState(readSession);
  const [state, setState] = useState<AuthState>(() => {
    currentToken = null;
    return initial ? { status: "checking", token: initial.token } : { status: "signed-out" };
  });
  // Each check has a number; one overtaken by a sign-out or a later check no longer moves the state.
  const checkNumber = useRef(0);

  const endSession = useCallback(
    (next: Extract<AuthState, { status: "signed-out" }>) => {
      checkNumber.current += 1;
      currentToken = null;
      writeSession(null);
      queryClient.clear();
      setState(next);
    },
    [queryClient],
  );

  const signOut = useCallback(
    (reason?: string) => endSession(reason ? { status: "signed-out", reason } : { status: "signed-out", notice: "Signed out, in every tab of this browser." }),
    [endSession],
  );

  /** Asks who `token` is; `kept`: the token comes from storage (a failure to ask then keeps it). */
  const check = useCallback(
    async (token: string, kept: boolean) => {
      const mine = (checkNumber.current += 1);
      setState({ status: "checking", token });
      try {
        const me = await whoAmI(token);
        if (mine !== checkNumber.current) return;
        currentToken = token;
        writeSession({ token, expiresAt: me.expires_at ?? null });
        setState({ status: "signed-in", token, me });
      } catch (e) {
        if (mine !== checkNumber.current) return;
        if (e instanceof ApiError && e.status === 401) {
          endSession({ status: "signed-out", reason: "The API does not know this token." });
        } else if (kept) {
          // No answer is not a refusal (a page left mid-check, the API unreachable): keep the session.
          setState({ status: "signed-out", kept: true, reason: `Could not check the kept sign-in: ${errorText(e)}` });
        } else {
          setState({ status: "signed-out", reason: `Could not sign in: ${errorText(e)}` });
        }
        throw e;
      }
    },
    [whoAmI, endSession],
  );

  const signIn = useCallback((token: string) => check(token.trim(), false), [check]);

  const retry = useCallback(() => {
    const session = readSession();
    if (session) check(session.token, true).catch(() => undefined);
    else setState({ status: "signed-out" });
  }, [check]);

  // The session kept by this or another tab: ask again who it is.
  useEffect(() => {
    if (initial) check(initial.token, true).catch(() => undefined);
    // Only on mount: check itself moves the state on.
  }, []);

  // Another tab signed in (adopt its token) or out (follow it).
  useEffect(
    () =>
      onSessionChangedElsewhere((session) => {
        if (session === null) {
          checkNumber.current += 1;
          currentToken = null;
          queryClient.clear();
          setState((prev) => (prev.status === "signed-out" ? prev : { status: "signed-out", notice: "Signed out in another tab." }));
        } else if (session.token !== currentToken) {
          check(session.token, true).catch(() => undefined);
        }
      }),
    [check, queryClient],
  );

  // A 401 to the signed-in token (a check's own 401 is the check's to tell).
  useEffect(
    () =>
      onUnauthorized(() => {
        if (currentToken !== null) signOut("The API refused the token (unknown or revoked); sign in again.");
      }),
    [signOut],
  );

  // Forget the token when it expires, even with the page idle.
  const expiresAt = state.status === "signed-in" ? state.me.expires_at : null;
  useEffect(() => {
    if (!expiresAt) return;
    const at = Date.parse(expiresAt);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const wait = () => {
      const left = at - Date.now();
      if (left <= 0) signOut(`The token expired at ${formatTime(new Date(at).toISOString())}; sign in again.`);
      else timer = setTimeout(wait, Math.min(left, TIMER_MAX_MS));
    };
    wait();
    return () => clearTimeout(timer);
  }, [expiresAt, signOut]);

  const value = useMemo<AuthContextValue>(() => {
    const me = state.status === "signed-in" ? state.me : null;
    return { state, role: me?.role ?? null, name: me?.name ?? null, signIn, signOut, retry };
  }, [state, signIn, signOut, retry]);
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): AuthContextValue {
  const value = useContext(AuthContext);
  if (!value) throw new Error("useAuth outside AuthProvider");
  return value;
}

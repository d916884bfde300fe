// The signed-in token and who it is for the whole page: sign in (ask GET /api/v1/me, keep the token in
// sessionStorage), sign out (also on any 401), and the role the UI follows.
import { useQueryClient } from "@tanstack/react-query";
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import { ApiError, onUnauthorized, setTokenSource, type Role } from "../api/client";
import { fetchMe, type Me } from "./role";
import { readToken, writeToken } from "./tokenStore";

export type AuthState =
  | { status: "signed-out"; reason?: string }
  | { status: "checking"; token: string }
  | { status: "signed-in"; token: string; me: Me };

interface AuthContextValue {
  state: AuthState;
  role: Role | null;
  /** The signed-in token's name. */
  name: string | null;
  signIn: (token: string) => Promise<void>;
  signOut: (reason?: string) => void;
}

const AuthContext = createContext<AuthContextValue | null>(null);

let currentToken: string | null = null;
setTokenSource(() => currentToken);

export function AuthProvider({ children, whoAmI = fetchMe }: { children: ReactNode; whoAmI?: typeof fetchMe }) {
  const queryClient = useQueryClient();
  const [state, setState] = useState<AuthState>(() => {
    const token = readToken();
    currentToken = token;
    return token ? { status: "checking", token } : { status: "signed-out" };
  });

  const signOut = useCallback(
    (reason?: string) => {
      currentToken = null;
      writeToken(null);
      queryClient.clear();
      setState(reason ? { status: "signed-out", reason } : { status: "signed-out" });
    },
    [queryClient],
  );

  const signIn = useCallback(async (token: string) => {
    const trimmed = token.trim();
    setState({ status: "checking", token: trimmed });
    try {
      const me = await whoAmI(trimmed);
      currentToken = trimmed;
      writeToken(trimmed);
      setState({ status: "signed-in", token: trimmed, me });
    } catch (e) {
      currentToken = null;
      writeToken(null);
      const reason =
        e instanceof ApiError && e.status === 401
          ? "The API does not know this token."
          : `Could not sign in: ${e instanceof Error ? e.message : String(e)}`;
      setState({ status: "signed-out", reason });
      throw e;
    }
  }, [whoAmI]);

  // A token kept from earlier in this tab: ask again who it is.
  useEffect(() => {
    if (state.status === "checking" && currentToken === state.token) {
      signIn(state.token).catch(() => undefined);
    }
    // Only on mount: signIn itself moves the state on.
  }, []);

  useEffect(() => onUnauthorized(() => signOut("The API refused the token (unknown or revoked); sign in again.")), [signOut]);

  const value = useMemo<AuthContextValue>(
    () => {
      const me = state.status === "signed-in" ? state.me : null;
      return { state, role: me?.role ?? null, name: me?.name ?? null, signIn, signOut };
    },
    [state, signIn, signOut],
  );
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): AuthContextValue {
  const value = useContext(AuthContext);
  if (!value) throw new Error("useAuth outside AuthProvider");
  return value;
}

// Renders a component as the app would: query cache, a signed-in token of a given role, a router at a URL, and
// the live mode (polling by default, as when no event stream is open).
import { QueryClientProvider } from "@tanstack/react-query";
import { render } from "@testing-library/react";
import type { ReactNode } from "react";
import { MemoryRouter } from "react-router-dom";
import { makeQueryClient } from "../App";
import type { Role } from "../api/client";
import { AuthProvider } from "../auth/AuthProvider";
import { me } from "./fixtures";

export const TEST_TOKEN = "ferry_test-token-0123456789";

export function renderSignedIn(ui: ReactNode, { role, url = "/" }: { role: Role; url?: string }) {
  window.localStorage.setItem("ferry.session", JSON.stringify({ token: TEST_TOKEN, expiresAt: null }));
  const queryClient = makeQueryClient();
  queryClient.setDefaultOptions({ queries: { ...queryClient.getDefaultOptions().queries, retry: false } });
  return render(
    <QueryClientProvider client={queryClient}>
      <AuthProvider whoAmI={async () => me(role)}>
        <MemoryRouter initialEntries={[url]}>{ui}</MemoryRouter>
      </AuthProvider>
    </QueryClientProvider>,
  );
}

// The dashboard's shell: query cache, auth, router. Signed-out visitors see the sign-in page; the rest is the
// clusters overview, one page per cluster (its tab in the path, its view state in the query string), the
// collector's health, the audit log and, for admins, the API tokens.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useState } from "react";
import { BrowserRouter, Navigate, Route, Routes } from "react-router-dom";
import { ApiError } from "./api/client";
import { AuthProvider, useAuth } from "./auth/AuthProvider";
import { RequireRole } from "./auth/RequireRole";
import { Layout } from "./components/Layout";
import { AuditPage } from "./pages/AuditPage";
import { ClusterPage } from "./pages/ClusterPage";
import { CollectorPage } from "./pages/CollectorPage";
import { ClustersPage } from "./pages/ClustersPage";
import { SignInPage } from "./pages/SignInPage";
import { TokensPage } from "./pages/TokensPage";

export function makeQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 1000,
        // A refusal will not change by asking again; a network blip might.
        retry: (failures, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && failures < 2,
      },
    },
  });
}

function Routed() {
  const { state } = useAuth();
  if (state.status !== "signed-in") return <SignInPage />;
  return (
    <Layout>
      <Routes>
        <Route path="/" element={<ClustersPage />} />
        <Route path="/collector" element={<CollectorPage />} />
        <Route path="/audit" element={<AuditPage />} />
        <Route
          path="/tokens"
          element={
            <RequireRole role="admin" fallback={<p className="muted">Only an admin token manages API tokens.</p>}>
              <TokensPage />
            </RequireRole>
          }
        />
        <Route path="/clusters/:clusterId" element={<ClusterPage />} />
        <Route path="/clusters/:clusterId/:tab" element={<ClusterPage />} />
        <Route path="/clusters/:clusterId/servers/:serverId" element={<ClusterPage />} />
        <Route path="*" element={<Navigate to="/" replace />} />
      </Routes>
    </Layout>
  );
}

export function App() {
  const [queryClient] = useState(makeQueryClient);
  return (
    <QueryClientProvider client={queryClient}>
      <AuthProvider>
        <BrowserRouter>
          <Routed />
        </BrowserRouter>
      </AuthProvider>
    </QueryClientProvider>
  );
}

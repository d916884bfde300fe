// One cluster: its header (name, live status, the settings for operators: edit, delete), the views as tabs (the tab is part of the path, each view's
// state in the query string, kept when switching tabs), fed live by the cluster's server-sent events. A server of it
// has a page of its own under the same header (/clusters/:clusterId/servers/:serverId, the server_id it reports).
import { NavLink, Navigate, useLocation, useParams } from "react-router-dom";
import { useCluster } from "../api/queries";
import { QueryState } from "../components/QueryState";
import { RequireRole } from "../auth/RequireRole";
import { AuditView } from "../features/audit/AuditView";
import { ClusterSettings } from "../features/clusterAdmin/ClusterSettings";
import { DrillsView } from "../features/drills/DrillsView";
import { InterleavingsView } from "../features/interleavings/InterleavingsView";
import { LagView } from "../features/lag/LagView";
import { OperationsView } from "../features/operations/OperationsView";
import { PositionsView } from "../features/positions/PositionsView";
import { ServerView } from "../features/server/ServerView";
import { isServerRef } from "../features/server/serverRef";
import { TopologyView } from "../features/topology/TopologyView";
import { TransportWarning } from "../features/topology/TransportWarning";
import { LiveContext, type LiveMode } from "../live/LiveContext";
import { useClusterEvents } from "../live/useClusterEvents";

const TABS = [
  { id: "topology", label: "Topology" },
  { id: "positions", label: "Positions" },
  { id: "interleavings", label: "Stream interleavings" },
  { id: "lag", label: "Lag" },
  { id: "operations", label: "Operations" },
  { id: "drills", label: "Drills" },
  { id: "audit", label: "Audit log" },
] as const;
type TabId = (typeof TABS)[number]["id"];

const LIVE_TEXT: Record<LiveMode, string> = {
  connecting: "○ connecting to live events…",
  streaming: "● live (server-sent events)",
  polling: "◐ events unavailable: polling every 2 s",
};

function TabContent({ tab, clusterId, clusterName }: { tab: TabId; clusterId: number; clusterName: string }) {
  switch (tab) {
    case "topology":
      return <TopologyView clusterId={clusterId} />;
    case "positions":
      return <PositionsView clusterId={clusterId} />;
    case "interleavings":
      return <InterleavingsView clusterId={clusterId} />;
    case "lag":
      return <LagView clusterId={clusterId} />;
    case "operations":
      return <OperationsView clusterId={clusterId} clusterName={clusterName} />;
    case "drills":
      return <DrillsView clusterId={clusterId} clusterName={clusterName} />;
    case "audit":
      return <AuditView clusterId={clusterId} />;
  }
}

export function ClusterPage() {
  const params = useParams();
  const location = useLocation();
  const clusterId = Number(params.clusterId);
  const serverId = params.serverId ?? null;
  const tab = serverId !== null ? "topology" : TABS.find((t) => t.id === params.tab)?.id;
  const cluster = useCluster(clusterId);
  const mode = useClusterEvents(clusterId);

  if (!Number.isInteger(clusterId) || clusterId < 1) return <Navigate to="/" replace />;
  if (serverId !== null && !isServerRef(serverId)) return <Navigate to={`/clusters/${clusterId}/topology`} replace />;
  if (!tab) return <Navigate to={`/clusters/${clusterId}/topology${location.search}`} replace />;
  const current = TABS.find((t) => t.id === tab)!;

  return (
    <LiveContext.Provider value={mode}>
      <QueryState isPending={cluster.isPending} error={cluster.error} what="cluster">
        {cluster.data ? (
          <>
            <div className="cluster-head">
              <h1>{cluster.data.name}</h1>
              <span role="status" className={`live live-${mode}`}>
                {LIVE_TEXT[mode]}
              </span>
            </div>
            <RequireRole role="operator">
              <ClusterSettings cluster={cluster.data} />
            </RequireRole>
            <TransportWarning cluster={cluster.data} />
            <nav aria-label="Cluster views" className="tabs">
              {TABS.map((t) => (
                <NavLink key={t.id} to={{ pathname: `/clusters/${clusterId}/${t.id}`, search: location.search }}>
                  {t.label}
                </NavLink>
              ))}
            </nav>
            {serverId !== null ? (
              <section aria-label="Server" className="tab-panel">
                <ServerView clusterId={clusterId} serverRef={serverId} />
              </section>
            ) : (
              <section aria-label={current.label} className="tab-panel">
                <TabContent tab={tab} clusterId={clusterId} clusterName={cluster.data.name} />
              </section>
            )}
          </>
        ) : null}
      </QueryState>
    </LiveContext.Provider>
  );
}

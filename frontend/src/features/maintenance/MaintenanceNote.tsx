// A server's maintenance in words wherever a server is shown: the badge, who set it and why, and "ends in …"
// counting down; past its end it is shown out of maintenance at once, and the cluster's data is refreshed once.
import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { queryKeys } from "../../api/queryKeys";
import { Badge } from "../../components/StatusBadge";
import { useNow } from "../../lib/useNow";
import { endsIn, inMaintenance, ownerAndReason, type MaintenanceDetail } from "./maintenance";

interface Server {
  maintenance: boolean;
  maintenance_detail?: MaintenanceDetail | null;
}

/** Refreshes the cluster's data once when a shown maintenance reaches its end (the API then says it is over). */
export function useRefreshOnMaintenanceEnd(clusterId: number, servers: readonly Server[] | undefined, now: number) {
  const queryClient = useQueryClient();
  const ended = (servers ?? []).some((s) => s.maintenance && !inMaintenance(s, now));
  useEffect(() => {
    if (ended) void queryClient.invalidateQueries({ queryKey: queryKeys.cluster(clusterId) });
  }, [ended, clusterId, queryClient]);
}

export function MaintenanceNote({ server, now, short }: { server: Server; now: number; short?: boolean }) {
  if (!inMaintenance(server, now)) return <>no</>;
  const detail = server.maintenance_detail;
  return (
    <span className="maintenance-note">
      <Badge tone="warn" symbol="⚑">{short ? "maintenance" : "in maintenance"}</Badge>{" "}
      <span className="small">
        {ownerAndReason(detail)} · {endsIn(detail, now)}
      </span>
    </span>
  );
}

/** The note with its own clock, for a place that shows one server. */
export function LiveMaintenanceNote({ clusterId, server }: { clusterId: number; server: Server }) {
  const now = useNow();
  useRefreshOnMaintenanceEnd(clusterId, [server], now);
  return <MaintenanceNote server={server} now={now} />;
}

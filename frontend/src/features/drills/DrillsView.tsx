// The Drills tab: schedules (create, edit, delete for operators), run now (operators), the history with each
// outcome, and the RTO over time. Viewers see schedules, history and chart only.
import { useState } from "react";
import { useDrillRuns, useDrillSchedules } from "../../api/drills";
import { useTopology } from "../../api/queries";
import { RequireRole } from "../../auth/RequireRole";
import { QueryState } from "../../components/QueryState";
import { DrillHistory } from "./DrillHistory";
import { RtoChart } from "./RtoChart";
import { RunNowForm } from "./RunNowForm";
import { ScheduleForm } from "./ScheduleForm";
import { ScheduleList } from "./ScheduleList";

export function DrillsView({ clusterId, clusterName }: { clusterId: number; clusterName: string }) {
  const schedules = useDrillSchedules(clusterId);
  const runs = useDrillRuns(clusterId, 100);
  const topology = useTopology(clusterId);
  const [creating, setCreating] = useState(false);
  const nodes = topology.data?.nodes ?? [];
  const names = new Map(nodes.map((n) => [n.registered_server_id, n.name]));
  const serverName = (id: number) => names.get(id) ?? `server ${id}`;
  return (
    <>
      <section aria-labelledby="schedules-heading">
        <h2 id="schedules-heading">Schedules</h2>
        <QueryState isPending={schedules.isPending} error={schedules.error} what="drill schedules">
          <ScheduleList clusterId={clusterId} schedules={schedules.data ?? []} nodes={nodes} serverName={serverName} />
        </QueryState>
        <RequireRole role="operator">
          {creating ? (
            <ScheduleForm clusterId={clusterId} nodes={nodes} onDone={() => setCreating(false)} />
          ) : (
            <button type="button" onClick={() => setCreating(true)}>
              New schedule
            </button>
          )}
        </RequireRole>
      </section>
      <RequireRole role="operator">
        <section aria-labelledby="run-heading">
          <h2 id="run-heading">Run now</h2>
          <RunNowForm clusterId={clusterId} clusterName={clusterName} schedules={schedules.data ?? []} nodes={nodes} serverName={serverName} />
        </section>
      </RequireRole>
      <section aria-labelledby="drill-history-heading">
        <h2 id="drill-history-heading">History</h2>
        <QueryState isPending={runs.isPending} error={runs.error} what="drill runs">
          <RtoChart runs={runs.data ?? []} />
          <DrillHistory runs={runs.data ?? []} schedules={schedules.data ?? []} />
        </QueryState>
      </section>
    </>
  );
}

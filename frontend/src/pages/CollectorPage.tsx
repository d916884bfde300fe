// The collector's health: which instance answers and its role, its recent cycles as a chart, then the servers behind
// their failed polls with each one's last error.
import { useCollectorCycles, useCollectorFailedPolls } from "../api/history";
import { QueryState } from "../components/QueryState";
import { CollectorHealthChart } from "../features/collector/CollectorHealthChart";
import { FailedPollsTable } from "../features/collector/FailedPolls";

export function CollectorPage() {
  const cycles = useCollectorCycles();
  const failed = useCollectorFailedPolls();
  return (
    <>
      <h1>Collector health</h1>
      <QueryState isPending={cycles.isPending} error={cycles.error} what="collector cycles">
        {cycles.data ? (
          <>
            <p className="small">
              Instance <span className="mono">{cycles.data.instance_id}</span>, {cycles.data.role ?? "not collecting"}; its last{" "}
              {cycles.data.cycles.length} cycles, refreshed every 2 s.
            </p>
            <CollectorHealthChart data={cycles.data} />
          </>
        ) : null}
      </QueryState>
      <h2>Failed polls by server</h2>
      <QueryState isPending={failed.isPending} error={failed.error} what="failed polls">
        {failed.data ? <FailedPollsTable data={failed.data} /> : null}
      </QueryState>
    </>
  );
}

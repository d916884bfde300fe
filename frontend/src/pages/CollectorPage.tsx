// The collector's health: which instance answers and its role, then its recent cycles as a chart.
import { useCollectorCycles } from "../api/history";
import { QueryState } from "../components/QueryState";
import { CollectorHealthChart } from "../features/collector/CollectorHealthChart";

export function CollectorPage() {
  const cycles = useCollectorCycles();
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
    </>
  );
}

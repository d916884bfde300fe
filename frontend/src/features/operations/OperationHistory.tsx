// The cluster's operations, newest first: type, state in words, who asked, when, how long, and (expandable)
// each step with its detail, and a switchover's or drill's catch-up phase and window steps; the operation an audit
// row links to (#operation-N) marked.
import { useEffect } from "react";
import { useLocation } from "react-router-dom";
import { useOperations } from "../../api/queries";
import { QueryState } from "../../components/QueryState";
import { Badge } from "../../components/StatusBadge";
import { formatDuration, formatTime } from "../../lib/format";
import { MoveReport } from "./CatchUp";
import { isRoleMove, stateSymbol, stateTone, unavailableSeconds } from "./operationFacts";
import { StepProgress } from "./StepProgress";

function seconds(from: string | null, to: string | null): number | null {
  if (!from || !to) return null;
  return (Date.parse(to) - Date.parse(from)) / 1000;
}

export function OperationHistory({ clusterId, serverName }: { clusterId: number; serverName: (id: number) => string }) {
  const operations = useOperations(clusterId);
  // An audit row links here with #operation-N: that row is marked and scrolled to once it is drawn.
  const { hash } = useLocation();
  const linked = /^#operation-(\d+)$/.exec(hash)?.[1] != null ? Number(/^#operation-(\d+)$/.exec(hash)?.[1]) : null;
  const drawn = operations.data?.some((op) => op.id === linked) ?? false;
  useEffect(() => {
    if (drawn && linked != null) document.getElementById(`operation-${linked}`)?.scrollIntoView?.({ block: "center" });
  }, [drawn, linked]);
  return (
    <QueryState isPending={operations.isPending} error={operations.error} what="operations">
      {operations.data?.length === 0 ? <p className="muted">No operations yet.</p> : null}
      <table className="data" aria-label="Operation history">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Type</th>
            <th scope="col">State</th>
            <th scope="col">Requested by</th>
            <th scope="col">Created</th>
            <th scope="col">Took</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {operations.data?.map((op) => {
            const unavailable = unavailableSeconds(op);
            return (
              <tr
                key={op.id}
                id={`operation-${op.id}`}
                className={op.id === linked ? "operation-row linked" : "operation-row"}
                aria-current={op.id === linked ? "true" : undefined}
              >
                <td>{op.id}</td>
                <td>
                  {op.type}
                  {op.dry_run ? <span className="small muted"> (dry run)</span> : null}
                </td>
                <td>
                  <Badge tone={stateTone(op.state)} symbol={stateSymbol(op.state)}>
                    {op.state}
                  </Badge>
                </td>
                <td>{op.requester}</td>
                <td>{formatTime(op.created_at)}</td>
                <td>
                  {formatDuration(seconds(op.started_at, op.finished_at))}
                  {unavailable != null ? <div className="small">writes unavailable {formatDuration(unavailable)}</div> : null}
                </td>
                <td>
                  <details>
                    <summary>{op.steps.length} steps</summary>
                    <StepProgress operation={op} serverName={serverName} />
                    {isRoleMove(op) && op.type !== "failover" ? <MoveReport figures={op.result} /> : null}
                  </details>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </QueryState>
  );
}

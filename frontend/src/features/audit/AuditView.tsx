// The Audit log tab: every state-changing request on this cluster (including refusals), newest first, with an
// outcome filter in the URL (?outcome=denied).
import { useAudit } from "../../api/queries";
import { QueryState } from "../../components/QueryState";
import { Badge } from "../../components/StatusBadge";
import { formatTime } from "../../lib/format";
import { useUrlChoice } from "../../lib/useUrlState";

const OUTCOMES = ["all", "succeeded", "failed", "denied"] as const;

export function AuditView({ clusterId }: { clusterId: number }) {
  const [outcome, setOutcome] = useUrlChoice("outcome", OUTCOMES, "all");
  const audit = useAudit(clusterId, 200, outcome === "all" ? null : outcome);
  return (
    <>
      <div className="toolbar">
        <label>
          Outcome{" "}
          <select value={outcome} onChange={(e) => setOutcome(e.target.value as (typeof OUTCOMES)[number])}>
            {OUTCOMES.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </label>
      </div>
      <QueryState isPending={audit.isPending} error={audit.error} what="audit log">
        {audit.data?.length === 0 ? <p className="muted">Nothing recorded.</p> : null}
        <div className="scroll-x">
          <table className="data" aria-label="Audit log">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Request</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              {audit.data?.map((entry) => (
                <tr key={entry.id}>
                  <td>{formatTime(entry.at)}</td>
                  <td>{entry.actor ?? "anonymous"}</td>
                  <td>{entry.action}</td>
                  <td className="mono small">
                    {entry.method} {entry.path}
                  </td>
                  <td>
                    <Badge
                      tone={entry.outcome === "succeeded" ? "ok" : entry.outcome === "denied" ? "warn" : "bad"}
                      symbol={entry.outcome === "succeeded" ? "✓" : "✕"}
                    >
                      {`${entry.outcome} (${entry.status_code})`}
                    </Badge>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </QueryState>
    </>
  );
}

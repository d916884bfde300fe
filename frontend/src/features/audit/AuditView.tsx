// The Audit log tab: every state-changing request on this cluster (including refusals), newest first, each typed
// (run, dry run, change, refused) with the operation it started linked; an outcome filter in the URL
// (?outcome=denied). The global audit page (pages/AuditPage.tsx) filters across clusters.
import { Link } from "react-router-dom";
import { useAudit } from "../../api/queries";
import { QueryState } from "../../components/QueryState";
import { useUrlChoice } from "../../lib/useUrlState";
import { AuditTable } from "./AuditTable";

const OUTCOMES = ["all", "succeeded", "failed", "denied"] as const;

export function AuditView({ clusterId }: { clusterId: number }) {
  const [outcome, setOutcome] = useUrlChoice("outcome", OUTCOMES, "all");
  const audit = useAudit({ clusterId, limit: 200, outcome: outcome === "all" ? null : outcome });
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
        <Link to={`/audit?cluster=${clusterId}`} className="small">
          Filter by actor, action, server and time on the audit page
        </Link>
      </div>
      <QueryState isPending={audit.isPending} error={audit.error} what="audit log">
        {audit.data?.length === 0 ? <p className="muted">Nothing recorded.</p> : null}
        {audit.data && audit.data.length > 0 ? <AuditTable entries={audit.data} /> : null}
      </QueryState>
    </>
  );
}

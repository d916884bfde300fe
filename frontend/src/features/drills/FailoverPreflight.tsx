// A failover drill's preflight as its dry run found it: the master it would fence, the replica it would promote, the
// domains that replica must keep, every replica that cannot take over with why (the preflight step's record), and the
// change consumers of the servers it moves with what happens to each stream.
import type { Operation } from "../operations/operationFacts";
import { ReplacementConsumers } from "../operations/PlanConsumers";

interface Found {
  master: string;
  candidate: string;
  domains: number[];
  not_candidates: Record<string, string>;
}

function found(detail: unknown): Found | null {
  if (!detail || typeof detail !== "object") return null;
  const d = detail as Partial<Found>;
  return typeof d.master === "string" && typeof d.candidate === "string" && Array.isArray(d.domains)
    ? { master: d.master, candidate: d.candidate, domains: d.domains, not_candidates: d.not_candidates ?? {} }
    : null;
}

export function FailoverPreflight({ operation }: { operation: Operation }) {
  const plan = found(operation.steps.find((s) => s.name === "preflight")?.detail);
  if (plan === null) return null;
  const others = Object.entries(plan.not_candidates);
  return (
    <section className="failover-preflight" aria-label="Failover plan">
      <h4>
        Failover: {plan.candidate} replaces {plan.master}
      </h4>
      <p className="small">
        {plan.master} is fenced alive (drained on the proxies, read-only), {plan.candidate} applies everything it has
        and is promoted keeping every domain ({plan.domains.join(", ") || "none yet"}), then {plan.master} rejoins as
        its replica.
      </p>
      {others.length > 0 ? (
        <ul className="small" aria-label="Replicas that cannot take over">
          {others.map(([server, why]) => (
            <li key={server}>
              {server}: {why}
            </li>
          ))}
        </ul>
      ) : null}
      <ReplacementConsumers operation={operation} />
    </section>
  );
}

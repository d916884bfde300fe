// The plan of a switchover of an intermediate master, per domain, as its dry run reports it: which source is
// replaced and by which candidate, every involved server's position in each domain now, who lends each domain up to
// which GTID, and what each server replicates from afterwards — the two-master shape's figure, live.
import type { Schemas } from "../../api/client";
import type { Operation } from "./operationFacts";

type Plan = Schemas["SwitchPlanView"];

/** The plan in an operation's result, when it has one (a switchover's). */
export function switchPlan(operation: Operation): Plan | null {
  return operation.type === "switchover" ? (operation.result?.plan ?? null) : null;
}

export function SwitchPlan({ operation }: { operation: Operation }) {
  const plan = switchPlan(operation);
  if (plan === null) return null;
  const servers = Object.keys(plan.positions);
  const at = (server: string): Record<string, string> => plan.positions[server] ?? {};
  const domains = [...new Set(servers.flatMap((s) => Object.keys(at(s))))].sort((a, b) => Number(a) - Number(b));
  return (
    <div className="switch-plan">
      <h4>
        Plan: {plan.candidate} replaces {plan.source}
      </h4>
      <div className="table-scroll">
        <table aria-label="Positions per domain before the switchover">
          <thead>
            <tr>
              <th scope="col">Server</th>
              {domains.map((d) => (
                <th scope="col" key={d}>
                  Domain {d}
                </th>
              ))}
              <th scope="col">Replicates from afterwards</th>
            </tr>
          </thead>
          <tbody>
            {servers.map((server) => (
              <tr key={server}>
                <th scope="row">{server}</th>
                {domains.map((d) => (
                  <td key={d}>
                    <code>{at(server)[d] ?? "—"}</code>
                  </td>
                ))}
                <td>{(plan.afterwards[server] ?? []).join(", ") || "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <ul className="small">
        {Object.entries(plan.lenders).map(([domain, lender]) => (
          <li key={domain}>
            {domain}: {lender}
          </li>
        ))}
      </ul>
    </div>
  );
}

// The plan of a switchover per domain, as its dry run reports it: which source is replaced and by which candidate,
// every involved server's position in each domain now, who lends each domain up to which GTID and who sends the rest
// (an intermediate master's: the master over which connection), what each server replicates from afterwards — the
// two-master shape's figure, live — the settings each connection the move makes or repoints carries over, and the
// change consumers connected to the servers it moves with what it does to each stream (and what servers cannot know).
import type { Schemas } from "../../api/client";
import { connectionName } from "../../lib/format";
import type { Operation } from "./operationFacts";
import { PlanConsumers } from "./PlanConsumers";

type Plan = Schemas["SwitchPlanView"];
type Moved = Schemas["MovedConnection"];

/** One moved connection in a sentence: where it replicates from, with which settings, from where, and what is not
 * carried over. */
export function movedWords(moved: Moved): string {
  const carried = moved.carried?.length ? moved.carried.join(", ") : "the server's defaults";
  const dropped = moved.not_carried?.length ? `; not carried: ${moved.not_carried.join(", ")}` : "";
  return `${moved.server} replicates over ${connectionName(moved.connection)} from ${moved.master} with ${carried} (${moved.settings_from})${dropped}`;
}

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
      <PlanConsumers consumers={plan.consumers ?? []} note={plan.consumers_note ?? null} />
      {plan.moved && plan.moved.length > 0 ? (
        <section aria-label="Settings carried over">
          <h5>Settings carried over</h5>
          <ul className="small">
            {plan.moved.map((moved) => (
              <li key={`${moved.server}/${moved.connection}`}>{movedWords(moved)}</li>
            ))}
          </ul>
        </section>
      ) : null}
    </div>
  );
}

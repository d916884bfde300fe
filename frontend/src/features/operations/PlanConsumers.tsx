// The change consumers a move of the master role affects, as its plan names them before anything moves — a
// switchover's plan, a failover's dry run, a failover drill's preview: each consumer connected to a server of the
// move with what the move does to its stream, and the note on what the servers cannot know (which consumers follow
// the master; a lost master's consumers, which cannot be listed at all).
import type { Schemas } from "../../api/client";
import type { Operation } from "./operationFacts";

type PlanConsumer = Schemas["PlanConsumer"];

/** A failover's (or a failover drill's) consumers and note, from its result; null for any other operation. */
export function replacementConsumers(
  operation: Operation,
): { consumers: PlanConsumer[]; note: string | null } | null {
  if (operation.type !== "failover" && operation.type !== "drill") return null;
  const result = operation.result;
  if (result?.consumers == null && result?.consumers_note == null) return null;
  return { consumers: result.consumers ?? [], note: result.consumers_note ?? null };
}

export function PlanConsumers({ consumers, note }: { consumers: PlanConsumer[]; note: string | null }) {
  return (
    <>
      {consumers.length > 0 ? (
        <section aria-label="Change consumers">
          <h5>Change consumers</h5>
          <ul className="small">
            {consumers.map((c) => (
              <li key={`${c.server}/${c.name}/${c.address}`}>
                {c.name} ({c.address}) on {c.server} at <code>{c.position || "—"}</code>: {c.afterwards}
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      {note ? <p className="small">{note}</p> : null}
    </>
  );
}

/** A failover's or a failover drill's consumers, as its dry run (or its run) recorded them. */
export function ReplacementConsumers({ operation }: { operation: Operation }) {
  const found = replacementConsumers(operation);
  return found === null ? null : <PlanConsumers consumers={found.consumers} note={found.note} />;
}

// What discovery said about the servers it saw (an admin address it could not learn, a server it could not reach),
// as a list; or that it had nothing to say.
import type { Schemas } from "../../api/client";

export function DiscoveryNotes({ notes }: { notes: Schemas["DiscoveryNote"][] }) {
  if (notes.length === 0) return <p className="small muted">Discovery had no notes.</p>;
  return (
    <ul aria-label="Discovery notes" className="small">
      {notes.map((note, i) => (
        <li key={i}>{note.message}</li>
      ))}
    </ul>
  );
}

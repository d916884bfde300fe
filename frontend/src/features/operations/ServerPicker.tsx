// Labelled selects of the cluster's servers: one server (every one-server operation form), the source of a
// switchover or failover on a cluster with several, or the new master (a named server, or "best": the
// orchestrator's choice).
import { useId } from "react";
import type { Schemas } from "../../api/client";

export function ServerPicker({
  label,
  nodes,
  value,
  onChange,
  exclude,
}: {
  label: string;
  nodes: Schemas["TopologyNode"][];
  value: number | null;
  onChange: (id: number | null) => void;
  exclude?: number | null;
}) {
  const id = useId();
  return (
    <span className="field">
      <label htmlFor={id}>{label}</label>{" "}
      <select id={id} value={value ?? ""} onChange={(e) => onChange(e.target.value ? Number(e.target.value) : null)}>
        <option value="">choose…</option>
        {nodes
          .filter((n) => n.registered_server_id !== exclude)
          .map((n) => (
            <option key={n.registered_server_id} value={n.registered_server_id}>
              {n.label} — {n.role}, {n.health}
            </option>
          ))}
      </select>
    </span>
  );
}

/** "New master": `best` (the orchestrator chooses; `bestLabel` says how) or a candidate's id as a string; `note`
 * adds what an operator should know of a candidate before choosing it (a configured delay). */
export function CandidatePicker({
  bestLabel,
  candidates,
  value,
  onChange,
  note,
}: {
  bestLabel: string;
  candidates: Schemas["TopologyNode"][];
  value: string;
  onChange: (value: string) => void;
  note?: (node: Schemas["TopologyNode"]) => string | null;
}) {
  return (
    <label>
      New master{" "}
      <select value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="best">{bestLabel}</option>
        {candidates.map((node) => (
          <option key={node.registered_server_id} value={String(node.registered_server_id)}>
            {node.label} — {node.health}
            {note?.(node) ? `, ${note(node)}` : ""}
          </option>
        ))}
      </select>
    </label>
  );
}

/** The source whose role moves (a master or an intermediate master), shown only where there is a choice; picking
 * one resets the candidate (`onPick`), whose list depends on it. */
export function SourcePicker({
  label,
  sources,
  value,
  onPick,
}: {
  label: string;
  sources: Schemas["TopologyNode"][];
  value: number | null;
  onPick: (id: number | null) => void;
}) {
  if (sources.length <= 1) return null;
  return <ServerPicker label={label} nodes={sources} value={value} onChange={onPick} />;
}

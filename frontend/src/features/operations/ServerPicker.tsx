// A labelled select of the cluster's servers (used by every one-server operation form).
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
          .filter((n) => n.server_id !== exclude)
          .map((n) => (
            <option key={n.server_id} value={n.server_id}>
              {n.name} ({n.role}, {n.health})
            </option>
          ))}
      </select>
    </span>
  );
}

// Typed confirmation: the action unlocks only once the cluster's exact name is typed.
import { useId } from "react";

export function TypedConfirmation({ expected, value, onChange }: { expected: string; value: string; onChange: (v: string) => void }) {
  const id = useId();
  const matches = value === expected;
  return (
    <div className="confirm">
      <label htmlFor={id}>
        Type the cluster name <strong className="mono">{expected}</strong> to confirm
      </label>
      <input
        id={id}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        autoComplete="off"
        spellCheck={false}
        aria-invalid={value !== "" && !matches}
      />
      <span className="small" aria-live="polite">
        {value === "" ? "" : matches ? "✓ matches" : "✕ does not match"}
      </span>
    </div>
  );
}

// A two-step button for small state changes: the first press asks, naming what will happen; the second does it.
import { useState } from "react";

interface Props {
  label: string;
  /** What the second press does, in words: "Put node2 in maintenance". */
  confirmLabel: string;
  onConfirm: () => void;
  disabled?: boolean;
}

export function ConfirmButton({ label, confirmLabel, onConfirm, disabled }: Props) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span role="group" aria-label={`Confirm: ${confirmLabel}`}>
      <button
        type="button"
        className="danger"
        disabled={disabled}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {confirmLabel}
      </button>{" "}
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

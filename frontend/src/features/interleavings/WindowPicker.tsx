// The interleavings' window: the last N seconds of writes, the newest N transactions of each server, or a GTID range
// per domain (From and To positions, e.g. 1-1-100,2-2-40, applied together; the server says what is wrong with them).
import { useEffect, useState, type FormEvent } from "react";
import { WINDOWS, WINDOW_LABELS, type WindowKey } from "./windowChoice";

interface WindowPickerProps {
  choice: WindowKey;
  onChoose: (key: WindowKey) => void;
  from: string | null;
  to: string | null;
  onRange: (from: string | null, to: string | null) => void;
}

export function WindowPicker({ choice, onChoose, from, to, onRange }: WindowPickerProps) {
  const [fromText, setFromText] = useState(from ?? "");
  const [toText, setToText] = useState(to ?? "");
  useEffect(() => setFromText(from ?? ""), [from]);
  useEffect(() => setToText(to ?? ""), [to]);
  const apply = (event: FormEvent) => {
    event.preventDefault();
    onRange(fromText.trim() || null, toText.trim() || null);
  };
  return (
    <>
      <label>
        Window{" "}
        <select value={choice} onChange={(e) => onChoose(e.target.value as WindowKey)}>
          {WINDOWS.map((key) => (
            <option key={key} value={key}>
              {WINDOW_LABELS[key]}
            </option>
          ))}
        </select>
      </label>
      {choice === "gtid" ? (
        <form onSubmit={apply} aria-label="GTID range" className="inline-form">
          <label>
            From <input value={fromText} onChange={(e) => setFromText(e.target.value)} placeholder="1-1-100,2-2-40" size={18} className="mono" />
          </label>{" "}
          <label>
            To <input value={toText} onChange={(e) => setToText(e.target.value)} placeholder="1-1-200" size={18} className="mono" />
          </label>{" "}
          <button type="submit" disabled={!fromText.trim() && !toText.trim()}>
            Show range
          </button>
        </form>
      ) : null}
    </>
  );
}

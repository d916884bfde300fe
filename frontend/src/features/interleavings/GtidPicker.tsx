// Pick a GTID to find on every server: typed as domain-server-seq (or picked by clicking a transaction); the
// lanes then say where it sits. Clear forgets it.
import { useEffect, useState, type FormEvent } from "react";
import { GTID_PATTERN } from "./commitGroups";

export function GtidPicker({ picked, onPick }: { picked: string | null; onPick: (gtid: string | null) => void }) {
  const [text, setText] = useState(picked ?? "");
  useEffect(() => setText(picked ?? ""), [picked]);
  const value = text.trim();
  const valid = GTID_PATTERN.test(value);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (valid) onPick(value);
  };
  return (
    <form onSubmit={submit} aria-label="Find a GTID" className="inline-form">
      <label>
        GTID <input value={text} onChange={(e) => setText(e.target.value)} placeholder="1-1-42" size={14} className="mono" />
      </label>{" "}
      <button type="submit" disabled={!valid}>
        Find on every server
      </button>
      {picked ? (
        <button type="button" onClick={() => onPick(null)}>
          Clear
        </button>
      ) : null}
      {value && !valid ? <span className="small error"> domain-server-seq, e.g. 1-1-42</span> : null}
    </form>
  );
}

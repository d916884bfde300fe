// The lag range: the last 15 min / 1 h / 6 h / 24 h (or 5 min), or a custom range typed as two local times;
// a zoom on a chart shows here as the custom range it set.
import { useEffect, useState, type FormEvent } from "react";
import type { LagRange, TimeWindow } from "../../api/queryKeys";
import type { RangeChoice } from "../../lib/useTimeWindow";

export const RANGES = ["5m", "15m", "1h", "6h", "24h"] as const satisfies readonly LagRange[];
export const RANGE_LABEL: Record<LagRange, string> = { "5m": "5 min", "15m": "15 min", "1h": "1 hour", "6h": "6 hours", "24h": "24 hours" };

/** An instant as a datetime-local input's value, in the reader's time zone. */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

interface Props {
  choice: RangeChoice;
  window: TimeWindow;
  onRange: (range: LagRange) => void;
  onCustom: (sinceMs: number, untilMs: number) => void;
}

export function TimeRangePicker({ choice, window, onRange, onCustom }: Props) {
  const fixed = "range" in window ? null : window;
  const [editing, setEditing] = useState(false);
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  useEffect(() => {
    if (fixed) {
      setFrom(toLocalInput(fixed.sinceMs));
      setTo(toLocalInput(fixed.untilMs));
    }
  }, [fixed?.sinceMs, fixed?.untilMs]);
  const sinceMs = Date.parse(from);
  const untilMs = Date.parse(to);
  const valid = Number.isFinite(sinceMs) && Number.isFinite(untilMs) && sinceMs < untilMs;
  const apply = (event: FormEvent) => {
    event.preventDefault();
    if (!valid) return;
    onCustom(sinceMs, untilMs);
    setEditing(false);
  };
  const openCustom = () => {
    if (!fixed) {
      const now = Date.now();
      setFrom(toLocalInput(now - 3_600_000));
      setTo(toLocalInput(now));
    }
    setEditing(true);
  };
  return (
    <fieldset>
      <legend>Range</legend>
      {RANGES.map((r) => (
        <label key={r}>
          <input type="radio" name="lag-range" value={r} checked={choice === r && !editing} onChange={() => { setEditing(false); onRange(r); }} />
          {RANGE_LABEL[r]}
        </label>
      ))}
      <label>
        <input type="radio" name="lag-range" value="custom" checked={choice === "custom" || editing} onChange={openCustom} />
        custom
      </label>
      {choice === "custom" || editing ? (
        <form className="inline-form" onSubmit={apply} aria-label="Custom range">
          <label>
            From <input type="datetime-local" step={1} value={from} onChange={(e) => setFrom(e.target.value)} />
          </label>{" "}
          <label>
            To <input type="datetime-local" step={1} value={to} onChange={(e) => setTo(e.target.value)} />
          </label>{" "}
          <button type="submit" disabled={!valid}>
            Show
          </button>
          {!valid ? <span className="small error"> the start must be before the end</span> : null}
        </form>
      ) : null}
    </fieldset>
  );
}

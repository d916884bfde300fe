// A rebuild's copy as it runs and once it ended: a progress bar (bytes copied of the donor's estimate), the phase,
// the rate and the time left at that rate, and why it is paused when it is (the donor trails its source). Read from
// the operation's `result.progress`, which the control plane updates about once a second while the copy runs.
import type { Schemas } from "../../api/client";
import { formatLagSeconds, humanize } from "../../lib/format";

type Progress = Schemas["RebuildProgress"];

/** 1,234,567 bytes → "1.2 MB" (decimal units, as the throttle's MB/s). */
export function formatBytes(bytes: number): string {
  const units = ["bytes", "kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit === 0 ? `${bytes} bytes` : `${value.toFixed(value >= 100 ? 0 : 1)} ${units[unit]}`;
}

/** The share copied, 0–100, when the donor's estimate is known (a copy can pass its estimate: capped). */
export function copiedPercent(progress: Progress): number | null {
  if (progress.bytes_total == null || progress.bytes_total <= 0) return null;
  return Math.min(100, (100 * progress.bytes_done) / progress.bytes_total);
}

export function CopyProgressBar({ progress }: { progress: Progress }) {
  const percent = copiedPercent(progress);
  const of = progress.bytes_total != null ? ` of about ${formatBytes(progress.bytes_total)}` : "";
  const done = progress.phase === "done";
  return (
    <div className="copy-progress" aria-label="Copy progress">
      <progress
        aria-label="Copied"
        max={100}
        value={done ? 100 : (percent ?? undefined)}
        data-bytes-done={progress.bytes_done}
      />
      <p className="small" role="status">
        {humanize(progress.phase)}: {formatBytes(progress.bytes_done)}
        {of}
        {percent != null && !done ? ` (${percent.toFixed(0)} %)` : ""}
        {progress.paused ? "" : ` · ${formatBytes(progress.rate_bytes_s)}/s`}
        {!done && !progress.paused && progress.eta_s != null ? ` · about ${formatLagSeconds(progress.eta_s)} left` : ""}
      </p>
      {progress.paused ? (
        <p className="small" role="alert">
          Paused{progress.paused_reason ? `: ${progress.paused_reason}` : ""}.
        </p>
      ) : null}
    </div>
  );
}

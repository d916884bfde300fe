// What a cron expression means while it is typed: plain words and the next runs in the schedule's time zone.
import { formatRunTime, previewCron } from "../../lib/cron";

export function CronPreview({ cron, timeZone, now = new Date() }: { cron: string; timeZone: string; now?: Date }) {
  const preview = previewCron(cron, timeZone, now, 5);
  if (!preview.ok) {
    return (
      <p className="error small" role="status" aria-live="polite">
        ✕ {preview.error}
      </p>
    );
  }
  return (
    <div className="cron-preview" role="status" aria-live="polite">
      <p>
        <strong>{preview.words}</strong>
      </p>
      <p className="small">Next runs:</p>
      <ol className="small">
        {preview.next.map((date) => (
          <li key={date.getTime()}>{formatRunTime(date, timeZone)}</li>
        ))}
      </ol>
    </div>
  );
}

// Create or edit a drill schedule: name (new ones only), cron with its plain-words preview and next runs, time
// zone, enabled, and the plan. Sends POST for a new schedule, PATCH for an existing one.
import { useState, type FormEvent } from "react";
import type { Schemas } from "../../api/client";
import { useCreateDrillSchedule, useUpdateDrillSchedule, type DrillSchedule } from "../../api/drills";
import { ErrorMessage } from "../../components/QueryState";
import { previewCron, timeZones } from "../../lib/cron";
import { CronPreview } from "./CronPreview";
import { PlanFields, planBody, type Plan } from "./PlanFields";

interface Props {
  clusterId: number;
  nodes: Schemas["TopologyNode"][];
  /** The schedule being edited; absent: a new one. */
  schedule?: DrillSchedule;
  onDone: () => void;
}

export function ScheduleForm({ clusterId, nodes, schedule, onDone }: Props) {
  const create = useCreateDrillSchedule(clusterId);
  const update = useUpdateDrillSchedule(clusterId);
  const [name, setName] = useState(schedule?.name ?? "");
  const [cron, setCron] = useState(schedule?.cron ?? "30 2 * * 1-5");
  const [timezone, setTimezone] = useState(schedule?.timezone ?? "UTC");
  const [enabled, setEnabled] = useState(schedule?.enabled ?? true);
  const [plan, setPlan] = useState<Plan>({
    kind: schedule?.kind ?? "switchover",
    candidate_strategy: schedule?.candidate_strategy ?? "rotation",
    candidate_registered_server_id: schedule?.candidate_registered_server_id ?? null,
    source_registered_server_id: schedule?.source_registered_server_id ?? null,
    switch_back: schedule?.switch_back ?? true,
    webhook_url: schedule?.webhook_url ?? "",
  });
  const body = planBody(plan);
  const valid = body !== null && previewCron(cron, timezone, new Date()).ok && (schedule !== undefined || /^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name));
  const mutation = schedule ? update : create;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!valid || body === null) return;
    const common = { cron: cron.trim(), timezone, enabled, ...body };
    const done = { onSuccess: onDone };
    if (schedule) update.mutate({ scheduleId: schedule.id, body: common }, done);
    else create.mutate({ name, ...common }, done);
  };

  return (
    <form onSubmit={submit} className="schedule-form" aria-label={schedule ? `Edit schedule ${schedule.name}` : "New drill schedule"}>
      <fieldset>
        <legend>{schedule ? `Edit schedule ${schedule.name}` : "New drill schedule"}</legend>
        {schedule ? null : (
          <label>
            Name <input value={name} onChange={(e) => setName(e.target.value)} required pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*" />
          </label>
        )}
        <label>
          Cron (minute hour day month weekday){" "}
          <input className="mono" value={cron} onChange={(e) => setCron(e.target.value)} required />
        </label>
        <label>
          Time zone <input value={timezone} onChange={(e) => setTimezone(e.target.value)} list="drill-time-zones" required />
        </label>
        <datalist id="drill-time-zones">
          {timeZones().map((zone) => (
            <option key={zone} value={zone} />
          ))}
        </datalist>
        <label>
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> enabled
        </label>
        <CronPreview cron={cron} timeZone={timezone} />
        <PlanFields plan={plan} onChange={setPlan} nodes={nodes} />
        <div className="actions">
          <button type="submit" disabled={!valid || mutation.isPending}>
            {schedule ? "Save schedule" : "Create schedule"}
          </button>
          <button type="button" onClick={onDone}>
            Cancel
          </button>
        </div>
        {mutation.error ? <ErrorMessage error={mutation.error} /> : null}
      </fieldset>
    </form>
  );
}

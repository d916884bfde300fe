// The cluster's drill schedules: cron in words, zone, the next runs the backend computed, the last run; for
// operators, edit and delete (asked twice).
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useDeleteDrillSchedule, type DrillSchedule } from "../../api/drills";
import { RequireRole } from "../../auth/RequireRole";
import { ErrorMessage } from "../../components/QueryState";
import { Badge } from "../../components/StatusBadge";
import { formatTime } from "../../lib/format";
import { formatRunTime, previewCron } from "../../lib/cron";
import { ScheduleForm } from "./ScheduleForm";

function DeleteButton({ clusterId, schedule }: { clusterId: number; schedule: DrillSchedule }) {
  const remove = useDeleteDrillSchedule(clusterId);
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" onClick={() => setAsking(true)}>
        Delete
      </button>
    );
  }
  return (
    <span role="group" aria-label={`Delete schedule ${schedule.name}?`}>
      <button type="button" className="danger" disabled={remove.isPending} onClick={() => remove.mutate(schedule.id)}>
        Delete {schedule.name} (runs are kept)
      </button>{" "}
      <button type="button" onClick={() => setAsking(false)}>
        Keep
      </button>
      {remove.error ? <ErrorMessage error={remove.error} /> : null}
    </span>
  );
}

export function ScheduleList({ clusterId, schedules, nodes, serverName }: {
  clusterId: number;
  schedules: DrillSchedule[];
  nodes: Schemas["TopologyNode"][];
  serverName: (id: number) => string;
}) {
  const [editing, setEditing] = useState<number | null>(null);
  if (schedules.length === 0) return <p className="muted">No drill schedules.</p>;
  return (
    <div className="scroll-x">
      <table className="data" aria-label="Drill schedules">
        <thead>
          <tr>
            <th scope="col">Schedule</th>
            <th scope="col">When</th>
            <th scope="col">Plan</th>
            <th scope="col">Next runs</th>
            <th scope="col">Last run</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {schedules.map((schedule) => {
            const words = previewCron(schedule.cron, schedule.timezone, new Date(), 1);
            return editing === schedule.id ? (
              <tr key={schedule.id}>
                <td colSpan={6}>
                  <ScheduleForm clusterId={clusterId} nodes={nodes} schedule={schedule} onDone={() => setEditing(null)} />
                </td>
              </tr>
            ) : (
              <tr key={schedule.id}>
                <th scope="row">
                  {schedule.name}{" "}
                  {schedule.enabled ? <Badge tone="ok" symbol="●">enabled</Badge> : <Badge tone="muted" symbol="○">disabled</Badge>}
                </th>
                <td>
                  <span className="mono">{schedule.cron}</span> {schedule.timezone}
                  <div className="small">{words.ok ? words.words : words.error}</div>
                </td>
                <td>
                  {schedule.kind === "failover" ? "failover: " : ""}
                  {schedule.candidate_strategy === "fixed" && schedule.candidate_registered_server_id != null
                    ? `to ${serverName(schedule.candidate_registered_server_id)}`
                    : "rotation"}
                  {schedule.switch_back ? ", switch back" : ""}
                </td>
                <td className="small">
                  {(schedule.next_runs ?? []).length === 0
                    ? "—"
                    : (schedule.next_runs ?? []).slice(0, 3).map((t) => <div key={t}>{formatRunTime(new Date(t), schedule.timezone)}</div>)}
                </td>
                <td>{formatTime(schedule.last_run_at)}</td>
                <td>
                  <RequireRole role="operator">
                    <button type="button" onClick={() => setEditing(schedule.id)}>
                      Edit
                    </button>{" "}
                    <DeleteButton clusterId={clusterId} schedule={schedule} />
                  </RequireRole>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

// Switchover and failover history: the write-unavailability window of each one that ran (a switchover's
// `unavailable_s`, a failover's `promoted_after_s`) over time, each point marked passed or failed. An operation
// that failed before measuring a window is drawn at zero with its failure mark.
import { CartesianGrid, Legend, ResponsiveContainer, Scatter, ScatterChart, Tooltip, XAxis, YAxis } from "recharts";
import { useOperationHistory, type OperationType } from "../../api/history";
import { OutcomeMark, outcomeCounts } from "../../components/OutcomeMark";
import { QueryState } from "../../components/QueryState";
import { paddedDomain, timeLabel, timeTicks } from "../../components/timeAxis";
import { formatDuration, formatTime } from "../../lib/format";
import { writeWindowSeconds, type Operation } from "./operationFacts";

const TYPES: readonly OperationType[] = ["switchover", "failover"];
const TYPE_LABEL: Record<string, string> = { switchover: "switchover (writes unavailable)", failover: "failover (promoted after)" };

export interface WindowPoint {
  id: number;
  type: string;
  t: number;
  seconds: number;
  measured: boolean;
  state: string;
  title: string;
}

export function windowPoints(operations: readonly Operation[]): WindowPoint[] {
  return operations
    .filter((op) => op.started_at != null && TYPES.includes(op.type) && op.state !== "pending" && op.state !== "running")
    .map((op) => {
      const figure = writeWindowSeconds(op);
      return {
        id: op.id,
        type: op.type,
        t: Date.parse(op.started_at!),
        seconds: figure ?? 0,
        measured: figure != null,
        state: op.state,
        title: `#${op.id} ${op.type} ${op.state} at ${formatTime(op.started_at)}: ${figure != null ? formatDuration(figure) : "no window measured"}`,
      };
    })
    .sort((a, b) => a.t - b.t);
}

export function UnavailabilityChart({ operations }: { operations: readonly Operation[] }) {
  const points = windowPoints(operations);
  if (points.length === 0) return <p className="muted">No switchover or failover has run yet.</p>;
  const [since, until] = paddedDomain(points.map((p) => p.t));
  const longest = Math.max(...points.map((p) => p.seconds));
  return (
    <figure className="chart" aria-label="Write unavailability per operation" data-points={points.length}>
      <figcaption>
        <strong>Write unavailability per switchover and failover</strong>{" "}
        <span className="small muted">
          ({points.length} operations: {outcomeCounts(points.map((p) => p.state), "succeeded")}; longest {formatDuration(longest)})
        </span>
      </figcaption>
      <ResponsiveContainer width="100%" height={240} initialDimension={{ width: 800, height: 240 }}>
        <ScatterChart margin={{ top: 8, right: 24, bottom: 8, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis
            dataKey="t"
            type="number"
            scale="time"
            domain={[since, until]}
            ticks={timeTicks(since, until)}
            tickFormatter={(t: number) => timeLabel(t, until - since)}
          />
          <YAxis dataKey="seconds" type="number" tickFormatter={(v: number) => formatDuration(v)} width={90} />
          <Tooltip
            cursor={{ strokeDasharray: "3 3" }}
            content={({ payload }) => {
              const point = payload?.[0]?.payload as WindowPoint | undefined;
              return point ? <div className="chart-tooltip">{point.title}</div> : null;
            }}
          />
          <Legend />
          {TYPES.map((type) => (
            <Scatter
              key={type}
              name={TYPE_LABEL[type]}
              data={points.filter((p) => p.type === type)}
              fill={type === "switchover" ? "#15803d" : "#7c3aed"}
              shape={<OutcomeMark />}
              isAnimationActive={false}
            />
          ))}
        </ScatterChart>
      </ResponsiveContainer>
    </figure>
  );
}

/** The chart over the cluster's switchovers and failovers (dry runs left out by the API). */
export function UnavailabilityHistory({ clusterId }: { clusterId: number }) {
  const history = useOperationHistory(clusterId, TYPES);
  return (
    <QueryState isPending={history.isPending} error={history.error} what="switchover and failover history">
      <UnavailabilityChart operations={history.data ?? []} />
    </QueryState>
  );
}

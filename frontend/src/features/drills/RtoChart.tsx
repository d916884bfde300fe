// RTO (write unavailability) and catch-up time of each drill over time; failed drills marked in the tooltip.
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { DrillRun } from "../../api/drills";
import { formatDuration } from "../../lib/format";

export function RtoChart({ runs }: { runs: DrillRun[] }) {
  const points = runs
    .filter((run) => run.rto_s != null || run.catch_up_s != null)
    .map((run) => ({ t: Date.parse(run.started_at), rto: run.rto_s, catchUp: run.catch_up_s, state: run.state }))
    .sort((a, b) => a.t - b.t);
  if (points.length === 0) return <p className="muted">No drill has recorded an RTO yet.</p>;
  return (
    <figure className="chart" aria-label="RTO over time" data-points={points.length}>
      <figcaption>
        <strong>RTO over time</strong> <span className="small muted">({points.length} drills)</span>
      </figcaption>
      <ResponsiveContainer width="100%" height={240}>
        <LineChart data={points} margin={{ top: 8, right: 24, bottom: 8, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey="t" type="number" scale="time" domain={["dataMin", "dataMax"]} tickFormatter={(t: number) => new Date(t).toLocaleDateString()} />
          <YAxis tickFormatter={(v: number) => formatDuration(v)} width={90} />
          <Tooltip
            labelFormatter={(t) => new Date(Number(t)).toLocaleString()}
            formatter={(v, name, item) => [`${formatDuration(Number(v))}${item.payload.state === "failed" ? " (drill FAILED)" : ""}`, name]}
          />
          <Legend />
          <Line dataKey="rto" name="RTO (writes unavailable)" stroke="#b91c1c" isAnimationActive={false} />
          <Line dataKey="catchUp" name="catch-up" stroke="#2563eb" strokeDasharray="4 2" isAnimationActive={false} />
        </LineChart>
      </ResponsiveContainer>
    </figure>
  );
}

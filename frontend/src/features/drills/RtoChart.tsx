// Drill history as a chart: the RTO (writes unavailable during the drill's switchover), the window the live canary
// writer saw (an application's view of the same outage) and the catch-up time of each run over time, each run's point marked passed (green tick) or failed (red cross); a failed run that
// measured nothing is marked at zero.
import { CartesianGrid, ComposedChart, Legend, Line, ResponsiveContainer, Scatter, Tooltip, XAxis, YAxis } from "recharts";
import type { DrillRun } from "../../api/drills";
import { OutcomeMark, outcomeCounts } from "../../components/OutcomeMark";
import { paddedDomain, timeLabel, timeTicks, zoneLabel } from "../../components/timeAxis";
import { formatDuration, formatTime } from "../../lib/format";

export interface DrillPoint {
  id: number;
  t: number;
  rto: number | null;
  /** The live canary writer's write-unavailability window (null: not run or nothing got through). */
  writer: number | null;
  catchUp: number | null;
  /** Where the pass/fail mark sits: the RTO, else zero. */
  mark: number;
  state: string;
  title: string;
}

export function drillPoints(runs: readonly DrillRun[]): DrillPoint[] {
  return runs
    .filter((run) => run.state === "passed" || run.state === "failed")
    .map((run) => ({
      id: run.id,
      t: Date.parse(run.started_at),
      rto: run.rto_s,
      writer: run.canary_writer?.window_s ?? null,
      catchUp: run.catch_up_s,
      mark: run.rto_s ?? 0,
      state: run.state,
      title: `drill #${run.id} ${run.state} at ${formatTime(run.started_at)}: RTO ${formatDuration(run.rto_s)}, writer window ${formatDuration(run.canary_writer?.window_s)}, catch-up ${formatDuration(run.catch_up_s)}`,
    }))
    .sort((a, b) => a.t - b.t);
}

export function RtoChart({ runs }: { runs: DrillRun[] }) {
  const points = drillPoints(runs);
  if (points.length === 0) return <p className="muted">No drill has finished yet.</p>;
  const [since, until] = paddedDomain(points.map((p) => p.t));
  return (
    <figure className="chart" aria-label="RTO over time" data-points={points.length}>
      <figcaption>
        <strong>RTO and catch-up per drill</strong>{" "}
        <span className="small muted">
          ({points.length} {points.length === 1 ? "drill" : "drills"}: {outcomeCounts(points.map((p) => p.state), "passed")})
        </span>
      </figcaption>
      <ResponsiveContainer width="100%" height={240} initialDimension={{ width: 800, height: 240 }}>
        <ComposedChart data={points} margin={{ top: 8, right: 24, bottom: 8, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis
            dataKey="t"
            type="number"
            scale="time"
            domain={[since, until]}
            ticks={timeTicks(since, until)}
            tickFormatter={(t: number) => timeLabel(t, until - since)}
            height={44}
            label={{ value: `time (${zoneLabel(until)})`, position: "insideBottom", offset: 0 }}
          />
          <YAxis tickFormatter={(v: number) => formatDuration(v)} width={90} />
          <Tooltip
            content={({ payload }) => {
              const point = payload?.[0]?.payload as DrillPoint | undefined;
              return point ? <div className="chart-tooltip">{point.title}</div> : null;
            }}
          />
          <Legend />
          <Line dataKey="rto" name="RTO (writes unavailable)" stroke="#b91c1c" dot={false} connectNulls isAnimationActive={false} />
          <Line dataKey="writer" name="live writer's window" stroke="#d97706" strokeDasharray="2 2" dot={false} connectNulls isAnimationActive={false} />
          <Line dataKey="catchUp" name="catch-up" stroke="#2563eb" strokeDasharray="4 2" connectNulls isAnimationActive={false} />
          <Scatter dataKey="mark" name="outcome (✓ passed, ✕ failed)" fill="#15803d" shape={<OutcomeMark />} isAnimationActive={false} />
        </ComposedChart>
      </ResponsiveContainer>
    </figure>
  );
}

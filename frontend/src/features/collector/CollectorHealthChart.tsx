// Collector health: how long each recent cycle took (every server polled, the results recorded) and how many of
// its polls failed, over time, from the instance answering (each API instance keeps its own last cycles).
import { Bar, CartesianGrid, ComposedChart, Legend, Line, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { CollectorCycles } from "../../api/history";
import { instantLabel, timeLabel, timeTicks, zoneLabel } from "../../components/timeAxis";
import { formatDuration } from "../../lib/format";

export function cycleSummary(cycles: CollectorCycles["cycles"]): { longest: number; median: number; failed: number; withFailures: number } {
  const durations = cycles.map((c) => c.duration_s).sort((a, b) => a - b);
  return {
    longest: durations.at(-1) ?? 0,
    median: durations[Math.floor((durations.length - 1) / 2)] ?? 0,
    failed: cycles.reduce((n, c) => n + c.failed, 0),
    withFailures: cycles.filter((c) => c.failed > 0).length,
  };
}

export function CollectorHealthChart({ data }: { data: CollectorCycles }) {
  const points = data.cycles.map((c) => ({ t: Date.parse(c.finished_at), duration: c.duration_s, failed: c.failed, polled: c.polled }));
  if (points.length === 0) {
    return (
      <p className="muted">
        No cycle recorded by this instance yet{data.role === "standby" ? " (it is a standby: another instance collects)" : ""}.
      </p>
    );
  }
  const summary = cycleSummary(data.cycles);
  const since = points[0]!.t;
  const until = Math.max(points.at(-1)!.t, since + 1000);
  return (
    <figure className="chart" aria-label="Collector cycles" data-points={points.length}>
      <figcaption>
        <strong>Collector cycles</strong>{" "}
        <span className="small muted">
          ({points.length} cycles: median {formatDuration(summary.median)}, longest {formatDuration(summary.longest)};{" "}
          {summary.failed} failed polls in {summary.withFailures} cycles; every {data.poll_interval_s} s)
        </span>
      </figcaption>
      <ResponsiveContainer width="100%" height={260} initialDimension={{ width: 800, height: 260 }}>
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
          <YAxis yAxisId="duration" tickFormatter={(v: number) => formatDuration(v)} width={90} />
          <YAxis yAxisId="failed" orientation="right" allowDecimals={false} width={40} />
          <Tooltip
            labelFormatter={(t) => `${instantLabel(Number(t))} ${zoneLabel(Number(t))}`}
            formatter={(v, name) => (name === "cycle duration" ? formatDuration(Number(v)) : `${v} polls`)}
          />
          <Legend />
          <Bar yAxisId="failed" dataKey="failed" name="failed polls" fill="#b91c1c" isAnimationActive={false} />
          <Line yAxisId="duration" dataKey="duration" name="cycle duration" stroke="#2563eb" dot={false} isAnimationActive={false} />
        </ComposedChart>
      </ResponsiveContainer>
    </figure>
  );
}

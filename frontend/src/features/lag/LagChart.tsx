// One Recharts line chart of lag over time (seconds or transactions), one step line per replica and domain.
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { formatLagSeconds, formatLagTransactions } from "../../lib/format";
import { seriesColor } from "../interleavings/domainColors";
import type { LagSeries } from "./lagSeries";

interface LagChartProps {
  title: string;
  metric: "seconds" | "transactions";
  series: LagSeries[];
  sinceMs: number;
  untilMs: number;
}

const TICKS = 6;

function timeLabel(t: number, spanMs: number): string {
  const date = new Date(t);
  return spanMs > 6 * 3_600_000
    ? date.toLocaleTimeString(undefined, { hour12: false, hour: "2-digit", minute: "2-digit" })
    : date.toLocaleTimeString(undefined, { hour12: false });
}

/** Evenly spaced time ticks over the whole range (Recharts would place them at data points only). */
export function timeTicks(sinceMs: number, untilMs: number, count = TICKS): number[] {
  const step = (untilMs - sinceMs) / (count - 1);
  return Array.from({ length: count }, (_, i) => Math.round(sinceMs + i * step));
}

export function LagChart({ title, metric, series, sinceMs, untilMs }: LagChartProps) {
  const format = metric === "seconds" ? formatLagSeconds : formatLagTransactions;
  const points = series.reduce((n, s) => n + s.points.length, 0);
  return (
    <figure className="chart" aria-label={title} data-points={points}>
      <figcaption>
        <strong>{title}</strong> <span className="small muted">({points} points)</span>
      </figcaption>
      <ResponsiveContainer width="100%" height={260}>
        <LineChart margin={{ top: 8, right: 24, bottom: 8, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis
            dataKey="t"
            type="number"
            scale="time"
            domain={[sinceMs, untilMs]}
            ticks={timeTicks(sinceMs, untilMs)}
            tickFormatter={(t: number) => timeLabel(t, untilMs - sinceMs)}
            allowDuplicatedCategory={false}
          />
          <YAxis dataKey={metric} tickFormatter={(v: number) => format(v)} width={90} allowDecimals={metric === "seconds"} />
          <Tooltip labelFormatter={(t) => timeLabel(Number(t), 0)} formatter={(v) => format(Number(v))} />
          <Legend />
          {series.map((s, i) => (
            <Line
              key={s.key}
              data={s.points}
              dataKey={metric}
              name={s.label}
              type="stepAfter"
              stroke={seriesColor(i)}
              strokeDasharray={i >= 8 ? "4 2" : undefined}
              dot={false}
              isAnimationActive={false}
            />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </figure>
  );
}

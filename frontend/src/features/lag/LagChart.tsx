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

const timeLabel = (t: number) => new Date(t).toLocaleTimeString(undefined, { hour12: false });

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
            tickFormatter={timeLabel}
            allowDuplicatedCategory={false}
          />
          <YAxis dataKey={metric} tickFormatter={(v: number) => format(v)} width={90} allowDecimals={metric === "seconds"} />
          <Tooltip labelFormatter={(t) => timeLabel(Number(t))} formatter={(v) => format(Number(v))} />
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

// One Recharts line chart of lag over time (seconds or transactions), one step line per replica and domain;
// dragging across it zooms to the instants dragged over (`onZoom`).
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { timeTicks } from "../../components/timeAxis";
import { formatLagSeconds, formatLagTransactions } from "../../lib/format";
import { seriesColor } from "../interleavings/domainColors";
import type { LagSeries } from "./lagSeries";
import { useDragZoom } from "./useDragZoom";

interface LagChartProps {
  title: string;
  metric: "seconds" | "transactions";
  series: LagSeries[];
  sinceMs: number;
  untilMs: number;
  onZoom?: (sinceMs: number, untilMs: number) => void;
}

function timeLabel(t: number, spanMs: number): string {
  const date = new Date(t);
  return spanMs > 6 * 3_600_000
    ? date.toLocaleTimeString(undefined, { hour12: false, hour: "2-digit", minute: "2-digit" })
    : date.toLocaleTimeString(undefined, { hour12: false });
}

export function LagChart({ title, metric, series, sinceMs, untilMs, onZoom }: LagChartProps) {
  const format = metric === "seconds" ? formatLagSeconds : formatLagTransactions;
  const points = series.reduce((n, s) => n + s.points.length, 0);
  const zoom = useDragZoom(sinceMs, untilMs, onZoom ?? (() => undefined));
  return (
    <figure className="chart" aria-label={title} data-points={points}>
      <figcaption>
        <strong>{title}</strong> <span className="small muted">({points} points{onZoom ? "; drag across to zoom in" : ""})</span>
      </figcaption>
      <div className="zoomable" ref={zoom.ref} {...(onZoom ? zoom.handlers : {})} data-testid={`${metric}-zoom`}>
        {zoom.band ? <div className="zoom-band" style={{ left: zoom.band.left, width: zoom.band.width }} aria-hidden="true" /> : null}
        <ResponsiveContainer width="100%" height={260} initialDimension={{ width: 800, height: 260 }}>
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
      </div>
    </figure>
  );
}

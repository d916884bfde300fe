// One Recharts line chart of lag over time (seconds or transactions), one step line per replica and domain, each
// in its own colour with its domain's dash pattern; a legend whose entries hide or show their line; a tooltip with
// every shown series at the hovered instant; the operations that ran in the range marked (a band from start to end,
// a line at the start, named); the axis in dates when the range is long, its time zone named. Dragging across the
// chart zooms to the instants dragged over (`onZoom`).
import { memo } from "react";
import { CartesianGrid, Line, LineChart, ReferenceArea, ReferenceLine, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { instantLabel, timeLabel, timeTicks, zoneLabel } from "../../components/timeAxis";
import { formatLagSeconds, formatLagTransactions } from "../../lib/format";
import { ChartLegend } from "./ChartLegend";
import type { DelayBand, LagSeries } from "./lagSeries";
import { LagTooltip } from "./LagTooltip";
import type { OperationMark } from "./operationMarks";
import type { SeriesStyle } from "./seriesStyle";
import { useDragZoom } from "./useDragZoom";

interface LagChartProps {
  title: string;
  metric: "seconds" | "transactions";
  /** The series the filters let through; those in `hidden` are listed in the legend but not drawn. */
  series: LagSeries[];
  styles: ReadonlyMap<string, SeriesStyle>;
  hidden: ReadonlySet<string>;
  onToggle: (key: string) => void;
  marks?: readonly OperationMark[];
  sinceMs: number;
  untilMs: number;
  onZoom?: (sinceMs: number, untilMs: number) => void;
  /** Configured delays to draw as bands from 0 (the seconds chart). */
  delays?: readonly DelayBand[];
}

/** Drawn again only when one of its props changes (the view around it re-renders with every live event). */
export const LagChart = memo(function LagChart({ title, metric, series, styles, hidden, onToggle, marks = [], sinceMs, untilMs, onZoom, delays = [] }: LagChartProps) {
  const format = metric === "seconds" ? formatLagSeconds : formatLagTransactions;
  const drawn = series.filter((s) => !hidden.has(s.key));
  const points = drawn.reduce((n, s) => n + s.points.length, 0);
  const zoom = useDragZoom(sinceMs, untilMs, onZoom ?? (() => undefined));
  const zone = zoneLabel(untilMs);
  return (
    <figure className="chart" aria-label={title} data-points={points} data-lines={drawn.length}>
      <figcaption>
        <strong>{title}</strong>{" "}
        <span className="small muted">
          ({points} points; {drawn.length} of {series.length} series shown; times in {zone}
          {onZoom ? "; drag across to zoom in" : ""})
        </span>
      </figcaption>
      <div className="zoomable" ref={zoom.ref} {...(onZoom ? zoom.handlers : {})} data-testid={`${metric}-zoom`}>
        {zoom.band ? <div className="zoom-band" style={{ left: zoom.band.left, width: zoom.band.width }} aria-hidden="true" /> : null}
        <ResponsiveContainer width="100%" height={280} initialDimension={{ width: 800, height: 280 }}>
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
              height={44}
              label={{ value: `time (${zone})`, position: "insideBottom", offset: 0, className: "axis-zone" }}
            />
            <YAxis
              dataKey={metric}
              tickFormatter={(v: number) => format(v)}
              width={90}
              allowDecimals={metric === "seconds"}
              domain={delays.length > 0 ? [0, (max: number) => Math.max(max, ...delays.map((d) => d.delayS * 1.1))] : undefined}
            />
            {delays.map((delay) => (
              <ReferenceArea
                key={delay.key}
                y1={0}
                y2={delay.delayS}
                fill="#bfdbfe"
                fillOpacity={0.35}
                ifOverflow="extendDomain"
                className="delay-band"
                label={{ value: delay.label, position: "insideTopRight", fontSize: 11, fill: "#1e3a8a" }}
              />
            ))}
            {marks.map((mark) =>
              mark.endMs > mark.startMs ? (
                <ReferenceArea key={`area-${mark.id}`} x1={mark.startMs} x2={mark.endMs} fill="#fde68a" fillOpacity={0.45} ifOverflow="hidden" />
              ) : null,
            )}
            {marks.map((mark) => (
              <ReferenceLine
                key={`line-${mark.id}`}
                x={mark.startMs}
                stroke="#111827"
                strokeDasharray="3 3"
                className="operation-mark"
                label={{ value: mark.label, position: "insideTopLeft", fontSize: 11, fill: "#111827" }}
              />
            ))}
            <Tooltip
              content={({ active, label }) =>
                active && label != null ? (
                  <LagTooltip at={Number(label)} metric={metric} series={drawn} styles={styles} format={format} zone={zone} />
                ) : null
              }
            />
            {drawn.map((s) => {
              const style = styles.get(s.key);
              return (
                <Line
                  key={s.key}
                  data={s.points}
                  dataKey={metric}
                  name={s.label}
                  type="stepAfter"
                  stroke={style?.color}
                  strokeDasharray={style?.dash}
                  strokeWidth={2}
                  dot={false}
                  isAnimationActive={false}
                />
              );
            })}
          </LineChart>
        </ResponsiveContainer>
      </div>
      <ChartLegend title={title} items={series} styles={styles} hidden={hidden} onToggle={onToggle} />
      {delays.length > 0 ? (
        <p className="small muted chart-delays">
          Configured delay (lag up to it is by design): {delays.map((d) => d.label).join("; ")}
        </p>
      ) : null}
      {marks.length > 0 ? (
        <p className="small muted chart-marks">
          Marked:{" "}
          {marks.map((mark, i) => (
            <span key={mark.id} data-operation={mark.id}>
              {i > 0 ? "; " : ""}
              {mark.label} ({mark.state}) {instantLabel(mark.startMs)}
              {mark.endMs > mark.startMs ? ` – ${instantLabel(mark.endMs)}` : ""}
            </span>
          ))}
        </p>
      ) : null}
    </figure>
  );
});

// The lag charts' tooltip: every shown series at the hovered instant (the value each had then: samples hold until
// the next), largest lag first, each with its colour and dash — none left out because it has no point exactly there.
import { instantLabel } from "../../components/timeAxis";
import type { LagSeries } from "./lagSeries";
import type { SeriesStyle } from "./seriesStyle";
import { pointAt } from "./valueAt";

interface LagTooltipProps {
  at: number;
  metric: "seconds" | "transactions";
  series: readonly LagSeries[];
  styles: ReadonlyMap<string, SeriesStyle>;
  format: (value: number) => string;
  zone: string;
}

export function LagTooltip({ at, metric, series, styles, format, zone }: LagTooltipProps) {
  const rows = series
    .map((s) => ({ series: s, point: pointAt(s.points, at) }))
    .filter((row) => row.point != null)
    .sort((a, b) => b.point![metric] - a.point![metric] || a.series.label.localeCompare(b.series.label));
  return (
    <div className="chart-tooltip" role="status" aria-label="Values at the hovered time">
      <div>
        <strong>{instantLabel(at)}</strong> <span className="muted">{zone}</span>
      </div>
      <table className="tooltip-rows">
        <tbody>
          {rows.map(({ series: s, point }) => {
            const style = styles.get(s.key);
            return (
              <tr key={s.key}>
                <td>
                  <svg width={22} height={8} aria-hidden="true">
                    <path d="M1 4 H21" stroke={style?.color} strokeWidth={3} strokeDasharray={style?.dash} fill="none" />
                  </svg>
                </td>
                <td>{s.label}</td>
                <td className="mono">{format(point![metric])}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

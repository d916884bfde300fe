// A chart's legend as toggle buttons: one per series, drawn with the series' colour and dash pattern; pressing one
// hides its line (and again shows it). Keyboard-reachable, and `aria-pressed` says whether the line is shown.
import type { SeriesStyle } from "./seriesStyle";

export interface LegendItem {
  key: string;
  label: string;
}

interface ChartLegendProps {
  title: string;
  items: readonly LegendItem[];
  styles: ReadonlyMap<string, SeriesStyle>;
  hidden: ReadonlySet<string>;
  onToggle: (key: string) => void;
}

export function ChartLegend({ title, items, styles, hidden, onToggle }: ChartLegendProps) {
  if (items.length === 0) return null;
  return (
    <ul className="chart-legend" aria-label={`${title}: series (press to hide or show)`}>
      {items.map((item) => {
        const style = styles.get(item.key);
        const shown = !hidden.has(item.key);
        return (
          <li key={item.key}>
            <button type="button" aria-pressed={shown} className={shown ? undefined : "series-hidden"} onClick={() => onToggle(item.key)}>
              <svg width={30} height={10} aria-hidden="true" aria-label={`${item.label} legend icon`}>
                <path d="M1 5 H29" stroke={style?.color ?? "#6b7280"} strokeWidth={3} strokeDasharray={style?.dash} fill="none" />
              </svg>
              <span>{item.label}</span>
            </button>
          </li>
        );
      })}
    </ul>
  );
}

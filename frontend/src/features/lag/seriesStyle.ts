// How each lag series is drawn: a colour of its own (a palette of well-separated hues, in the series' order) and,
// as a second cue that does not rely on colour, a dash pattern per GTID domain (domain 0 solid, then dashed,
// dotted, dash-dot…), so two series of one replica are told apart by their pattern and two identical lines by
// their colour.
import type { LagSeries } from "./lagSeries";

/** Twenty hues (Tableau 10, two more, and darker and lighter ones), so a cluster's series keep one each — a
 * three-server cluster whose master moved around has up to 18 (replica, master, domain) series; cycled beyond. */
const PALETTE = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
  "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354",
  "#756bb1", "#636363",
];

/** Dash patterns by domain (SVG stroke-dasharray; undefined is solid), cycled beyond. */
const DASHES: readonly (string | undefined)[] = [undefined, "8 4", "2 3", "10 3 2 3", "4 4", "14 4"];

export interface SeriesStyle {
  color: string;
  dash: string | undefined;
}

export function domainDash(domain: number): string | undefined {
  return DASHES[((domain % DASHES.length) + DASHES.length) % DASHES.length];
}

/** Each series' style by its key: colours in the order given (so filtering does not repaint the others, pass the
 * unfiltered list), dashes by domain. */
export function seriesStyles(series: readonly LagSeries[]): Map<string, SeriesStyle> {
  return new Map(series.map((s, i) => [s.key, { color: PALETTE[i % PALETTE.length]!, dash: domainDash(s.domain) }]));
}

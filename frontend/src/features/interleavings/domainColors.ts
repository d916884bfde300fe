// One colour per GTID domain (a fixed palette, cycled), shared by the interleaving lanes and the lag charts.
const PALETTE = ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626"];

export function domainColor(domain: number): string {
  return PALETTE[((domain % PALETTE.length) + PALETTE.length) % PALETTE.length]!;
}

/** A colour for the n-th series of a chart. */
export function seriesColor(index: number): string {
  return PALETTE[index % PALETTE.length]!;
}

// How far behind a position is, as a level for the matrix's cell colour: the most advanced in its domain, then
// bands of transactions behind (each band's colour stronger; the legend names them).
export type BehindLevel = "ahead" | "b1" | "b10" | "b100" | "b1000";

export const BEHIND_LEVELS: { level: Exclude<BehindLevel, "ahead">; label: string }[] = [
  { level: "b1", label: "1–9 behind" },
  { level: "b10", label: "10–99" },
  { level: "b100", label: "100–999" },
  { level: "b1000", label: "1,000 or more" },
];

export function behindLevel(behind: number): BehindLevel {
  if (behind <= 0) return "ahead";
  if (behind < 10) return "b1";
  if (behind < 100) return "b10";
  if (behind < 1000) return "b100";
  return "b1000";
}

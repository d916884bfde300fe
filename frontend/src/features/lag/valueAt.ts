// What a change-only series reads at an instant (a pure function): the value of its newest point at or before it,
// since each sample holds until the next. The tooltip uses it to list every series at the hovered time, not only
// those that happen to have a point exactly there.
import type { LagPoint } from "./lagSeries";

/** The point in force at `t` (points sorted by time), or null before the first. */
export function pointAt(points: readonly LagPoint[], t: number): LagPoint | null {
  let low = 0;
  let high = points.length - 1;
  let found: LagPoint | null = null;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const point = points[mid]!;
    if (point.t <= t) {
      found = point;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  return found;
}

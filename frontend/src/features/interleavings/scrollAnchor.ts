// Where the lanes' scroll region goes when the lanes change (pure functions): kept at the newest end (the right)
// while the user has not scrolled away from it, so the newest transactions are in view on load and after each
// refresh; once they scrolled away, kept on the same GTID column (the one at the left edge of what they look at), so
// new transactions arriving and old ones leaving do not move what they look at.

/** Within this many pixels of the right end counts as at the end. */
export const AT_END_SLACK_PX = 4;

export interface ScrollAnchor {
  /** The GTID of the column at the left edge of the view. */
  gtid: string;
  /** How far past that column's start the view begins, in pixels. */
  delta: number;
}

export function isAtEnd(scrollLeft: number, clientWidth: number, scrollWidth: number): boolean {
  return scrollLeft + clientWidth >= scrollWidth - AT_END_SLACK_PX;
}

/** The column at the left edge of the view, given the columns' GTIDs and one column's width. */
export function anchorAt(scrollLeft: number, columns: readonly string[], columnPx: number): ScrollAnchor | null {
  if (columns.length === 0) return null;
  const column = Math.min(Math.max(Math.floor(scrollLeft / columnPx), 0), columns.length - 1);
  return { gtid: columns[column]!, delta: scrollLeft - column * columnPx };
}

export interface ScrollPlan {
  /** The user is at the newest end (or has not scrolled yet). */
  follow: boolean;
  anchor: ScrollAnchor | null;
  columnOf: (gtid: string) => number | undefined;
  columnPx: number;
  /** scrollWidth - clientWidth after the change. */
  maxScroll: number;
}

/** The scrollLeft to set after the lanes changed; null: leave it. */
export function scrollTarget({ follow, anchor, columnOf, columnPx, maxScroll }: ScrollPlan): number | null {
  const clamp = (x: number) => Math.min(Math.max(x, 0), Math.max(maxScroll, 0));
  if (follow) return clamp(maxScroll);
  if (!anchor) return null;
  const column = columnOf(anchor.gtid);
  // The column they looked at has left the window (older than the oldest shown): the oldest end is nearest.
  if (column === undefined) return 0;
  return clamp(column * columnPx + anchor.delta);
}

// The hovered GTID (a pure reducer): set by the pointer moving onto a transaction, cleared by it moving onto no
// transaction or out of the lanes. Kept by GTID, not by element, so a refresh that re-renders or moves the blocks keeps
// it: the browser reports "mouse over another element" when the content moves under a still pointer, and such an event,
// at the very coordinates of the last real move, changes nothing.

export interface HoverState {
  gtid: string | null;
  /** Where the pointer last really moved (page coordinates); null before any move. */
  at: { x: number; y: number } | null;
}

export const NO_HOVER: HoverState = { gtid: null, at: null };

export type HoverEvent =
  /** The pointer is over the block of `gtid` (null: over no block). */
  | { kind: "move"; gtid: string | null; x: number; y: number }
  /** The pointer left the lanes. */
  | { kind: "leave"; x: number; y: number };

export function hoverReducer(state: HoverState, event: HoverEvent): HoverState {
  const still = state.at !== null && state.at.x === event.x && state.at.y === event.y;
  if (still) return state; // the content moved, not the pointer
  const at = { x: event.x, y: event.y };
  if (event.kind === "leave") return { gtid: null, at };
  return state.gtid === event.gtid ? { ...state, at } : { gtid: event.gtid, at };
}

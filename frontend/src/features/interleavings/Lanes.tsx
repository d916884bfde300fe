// The lanes of the interleavings view: one row per server, one block per transaction (coloured by domain and
// labelled `domain-seq`), every GTID in its own column — the same column in every lane that holds it, so each
// domain's order reads across the servers. Hovering or focusing a block highlights the same GTID in every lane, and
// a lane without it says in that column whether it will never receive it or has not yet; clicking one (or Enter)
// picks it, and every lane says where the picked GTID sits or why it is not there. Transactions the master committed
// in one group are outlined together. The lanes scroll together, kept at the newest end (the right) unless the user
// scrolled away (then on what they look at). Each lane is one Tab stop; the arrow keys, Home and End move along it.
import { useEffect, useLayoutEffect, useRef, type KeyboardEvent, type MouseEvent } from "react";
import type { Alignment, Lane } from "./align";
import { pickedPlace, type GroupMark } from "./commitGroups";
import { domainColor } from "./domainColors";
import type { HoverEvent } from "./hover";
import { ABSENT_SHORT, presenceOf } from "./presence";
import { anchorAt, isAtEnd, scrollTarget, type ScrollAnchor } from "./scrollAnchor";
import { behindText } from "./windowChoice";

/** One column's width in pixels (a block and the gap after it); the stylesheet's .block width is this minus GAP_PX. */
export const COLUMN_PX = 80;
const GAP_PX = 4;

interface LanesProps {
  alignment: Alignment;
  highlighted: string | null;
  /** The pointer moved over the lanes (onto a block or not) or left them. */
  onHover: (event: HoverEvent) => void;
  /** A block got (gtid) or lost (null) the keyboard focus. */
  onFocusGtid: (gtid: string | null) => void;
  /** Per lane (server id), each block's commit group mark, in the lane's order. */
  groups?: Map<number, (GroupMark | null)[]>;
  picked?: string | null;
  onPick?: (gtid: string) => void;
}

const MOVES: Record<string, (index: number, last: number) => number> = {
  ArrowRight: (i, last) => Math.min(i + 1, last),
  ArrowLeft: (i) => Math.max(i - 1, 0),
  Home: () => 0,
  End: (_, last) => last,
};

function moveFocus(event: KeyboardEvent<HTMLLIElement>) {
  const move = MOVES[event.key];
  const list = event.currentTarget.parentElement;
  if (!move || !list) return;
  const items = [...list.querySelectorAll<HTMLElement>(":scope > li.block")];
  event.preventDefault();
  const index = items.indexOf(event.currentTarget);
  items[move(index, items.length - 1)]?.focus();
}

type LaneRowProps = {
  lane: Lane;
  firstName: string;
  laneCount: number;
  columnCount: number;
  /** GTIDs whose column shows, in a lane without them, why not (the highlighted and the picked one), by column. */
  absentShown: { gtid: string; column: number }[];
  marks: (GroupMark | null)[];
} & Pick<LanesProps, "highlighted" | "onFocusGtid" | "picked" | "onPick">;

function LaneRow({ lane, firstName, highlighted, onFocusGtid, laneCount, columnCount, absentShown, marks, picked, onPick }: LaneRowProps) {
  const place = picked ? pickedPlace(lane, picked) : null;
  const behind = lane.error ? null : behindText(lane.behind);
  const held = new Set(lane.blocks.map((block) => block.gtid));
  const absent = absentShown.filter(({ gtid }) => !held.has(gtid)).map((shown) => ({ ...shown, presence: presenceOf(lane, shown.gtid) }));
  return (
    <div className="lane" role="group" aria-label={`Binlog of ${lane.name}`} data-lane={lane.name}>
      <div className="lane-head">
        <strong>{lane.name}</strong>
        <div className="small">
          {lane.error ? (
            <span className="error">✕ {lane.error}</span>
          ) : (
            <>
              <span>{lane.domainOrderKept ? "✓ each domain in order" : "✕ a domain is out of order"}</span>
              {lane.sameInterleavingAsFirst === null ? null : !lane.overlapsFirst ? (
                <div className="muted" data-testid="no-overlap">
                  no overlap to compare with {firstName}
                </div>
              ) : (
                <div title={lane.interleavingNote ?? undefined}>
                  {lane.sameInterleavingAsFirst
                    ? `= same interleaving as ${firstName}`
                    : `≠ interleaving differs from ${firstName}: ${lane.interleavingNote ?? "in order"}`}
                </div>
              )}
              {lane.truncated ? <div className="muted">only the newest of the window listed (its bound)</div> : null}
              {behind ? <div className="behind-head">{behind.total} behind the newest end ({behind.detail})</div> : null}
              {lane.inColumnOrder ? null : <div>⇄ its binlog crosses the columns (hover for its own order)</div>}
            </>
          )}
          {place ? (
            <div className={place.found ? "picked-place" : "picked-place muted"} data-testid="picked-place">
              {picked}: {place.text}
            </div>
          ) : null}
        </div>
      </div>
      <ol className="lane-blocks" style={{ gridTemplateColumns: `repeat(${columnCount}, ${COLUMN_PX - GAP_PX}px) max-content`, columnGap: GAP_PX }}>
        {lane.blocks.map((block, i) => {
          const isHighlighted = block.gtid === highlighted;
          const tabStop = highlighted && held.has(highlighted) ? isHighlighted : i === 0;
          const isPicked = block.gtid === picked;
          const mark = marks[i] ?? null;
          return (
            <li
              key={block.gtid}
              tabIndex={tabStop ? 0 : -1}
              onKeyDown={(event) => (event.key === "Enter" ? onPick?.(block.gtid) : moveFocus(event))}
              onClick={() => onPick?.(block.gtid)}
              className={`block${isHighlighted ? " block-highlighted" : ""}${isPicked ? " block-picked" : ""}${block.sharedBy < laneCount ? " block-partial" : ""}${mark ? ` group group-${mark.place}` : ""}`}
              style={{ backgroundColor: domainColor(block.domain), gridColumn: block.column + 1 }}
              data-gtid={block.gtid}
              data-column={block.column}
              data-highlighted={isHighlighted ? "true" : undefined}
              data-picked={isPicked ? "true" : undefined}
              data-group={mark?.id}
              aria-label={`GTID ${block.gtid}, domain ${block.domain}, seq ${block.seqNo}, position ${block.index + 1}${block.sharedBy < laneCount ? `, on ${block.sharedBy} of ${laneCount} servers` : ""}${mark ? `, committed by the master in one group of ${mark.size}` : ""}`}
              aria-current={isHighlighted ? "true" : undefined}
              onFocus={() => onFocusGtid(block.gtid)}
              onBlur={() => onFocusGtid(null)}
            >
              {block.label}
            </li>
          );
        })}
        {behind ? (
          <li
            className="behind-mark"
            style={{ gridColumn: columnCount + 1 }}
            title={`Behind the window's newest end by ${behind.detail} (seq_nos, from positions)`}
            data-testid="behind"
            data-behind={behind.total}
          >
            {behind.total} transaction{behind.total === 1 ? "" : "s"} behind ←
          </li>
        ) : null}
        {absent.map(({ gtid, column, presence }) => (
          <li
            key={`absent ${gtid}`}
            aria-hidden="true"
            className={`absent absent-${presence.kind}`}
            style={{ gridColumn: column + 1 }}
            data-absent-for={gtid}
            data-absent={presence.kind}
            title={`${gtid}: ${presence.text}`}
          >
            {presence.kind === "here" ? null : ABSENT_SHORT[presence.kind]}
          </li>
        ))}
      </ol>
    </div>
  );
}

/** The GTID of the block (or of the absent cell) under an event's target. */
function gtidUnder(target: EventTarget): string | null {
  const cell = target instanceof Element ? target.closest("[data-gtid], [data-absent-for]") : null;
  return cell?.getAttribute("data-gtid") ?? cell?.getAttribute("data-absent-for") ?? null;
}

export function Lanes({ alignment, highlighted, onHover, onFocusGtid, groups, picked = null, onPick }: LanesProps) {
  const first = alignment.lanes[0]?.name ?? "";
  const region = useRef<HTMLDivElement>(null);
  const follow = useRef(true);
  const anchor = useRef<ScrollAnchor | null>(null);
  const columns = useRef(alignment.columns);
  columns.current = alignment.columns;
  const pickedShown = picked != null && alignment.columnOf.has(picked);

  useLayoutEffect(() => {
    // Newest in view while the user stays at the newest end; else the column they look at stays where it was.
    const el = region.current;
    if (!el) return;
    const target = scrollTarget({
      follow: follow.current,
      anchor: anchor.current,
      columnOf: (gtid) => alignment.columnOf.get(gtid),
      columnPx: COLUMN_PX,
      maxScroll: el.scrollWidth - el.clientWidth,
    });
    if (target !== null && Math.abs(el.scrollLeft - target) >= 1) el.scrollLeft = target;
  }, [alignment]);
  useEffect(() => {
    // Bring the picked transaction into view (which is scrolling away from the newest end, unless it is there).
    if (!picked) return;
    region.current?.querySelector(`[data-picked="true"]`)?.scrollIntoView?.({ block: "nearest", inline: "center" });
  }, [picked, pickedShown]);
  const onScroll = () => {
    const el = region.current;
    if (!el) return;
    follow.current = isAtEnd(el.scrollLeft, el.clientWidth, el.scrollWidth);
    anchor.current = anchorAt(el.scrollLeft, columns.current, COLUMN_PX);
  };

  const absentShown = [highlighted, picked]
    .filter((gtid, i, all): gtid is string => gtid !== null && all.indexOf(gtid) === i && alignment.columnOf.has(gtid))
    .map((gtid) => ({ gtid, column: alignment.columnOf.get(gtid)! }));
  const move = (event: MouseEvent) => onHover({ kind: "move", gtid: gtidUnder(event.target), x: event.clientX, y: event.clientY });
  const leave = (event: MouseEvent) => onHover({ kind: "leave", x: event.clientX, y: event.clientY });
  return (
    <>
      <p className="small" aria-live="polite">
        {highlighted && alignment.columnOf.has(highlighted)
          ? `GTID ${highlighted}: ` +
            alignment.lanes
              .map((lane) => {
                const presence = presenceOf(lane, highlighted);
                return `${lane.name} ${presence.kind === "here" ? `#${presence.block.index + 1}` : ABSENT_SHORT[presence.kind]}`;
              })
              .join(", ")
          : "Oldest on the left, newest on the right; one column per GTID, the same in every lane that holds it. Hover a transaction, or Tab to a lane and move with the arrow keys, to see it in every lane."}
      </p>
      <div className="lanes" ref={region} onScroll={onScroll} onMouseMove={move} onMouseLeave={leave} data-testid="lanes">
        {alignment.lanes.map((lane) => (
          <LaneRow
            key={lane.serverId}
            lane={lane}
            firstName={first}
            highlighted={highlighted}
            onFocusGtid={onFocusGtid}
            laneCount={alignment.lanes.length}
            columnCount={alignment.columns.length}
            absentShown={absentShown}
            marks={groups?.get(lane.serverId) ?? []}
            picked={picked}
            onPick={onPick}
          />
        ))}
      </div>
    </>
  );
}

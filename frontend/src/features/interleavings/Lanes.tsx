// The lanes of the interleavings view: one row per server, one block per transaction (coloured by domain and
// labelled `domain-seq`); hovering or focusing a block highlights the same GTID in every lane; clicking one (or
// Enter) picks it, and every lane says where the picked GTID sits or that it is not there. Transactions the master
// committed in one group are outlined together. Each lane is one Tab stop; the arrow keys, Home and End move along it.
import { useEffect, useRef, type KeyboardEvent } from "react";
import type { Alignment, Lane } from "./align";
import { pickedPlace, type GroupMark } from "./commitGroups";
import { domainColor } from "./domainColors";

interface LanesProps {
  alignment: Alignment;
  highlighted: string | null;
  onHighlight: (gtid: string | null) => void;
  /** Per lane (server id), each block's commit group mark. */
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
  const items = event.currentTarget.parentElement?.children;
  if (!move || !items) return;
  event.preventDefault();
  const index = Array.prototype.indexOf.call(items, event.currentTarget) as number;
  (items[move(index, items.length - 1)] as HTMLElement | undefined)?.focus();
}

type LaneRowProps = { lane: Lane; firstName: string; laneCount: number; marks: (GroupMark | null)[] } & Omit<LanesProps, "alignment" | "groups">;

function LaneRow({ lane, firstName, highlighted, onHighlight, laneCount, marks, picked, onPick }: LaneRowProps) {
  const place = picked ? pickedPlace(lane, picked) : null;
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
              {lane.sameInterleavingAsFirst === null ? null : (
                <div title={lane.interleavingNote ?? undefined}>
                  {lane.sameInterleavingAsFirst
                    ? `= same interleaving as ${firstName}`
                    : `≠ interleaving differs from ${firstName}: ${lane.interleavingNote ?? "in order"}`}
                </div>
              )}
            </>
          )}
          {place ? (
            <div className={place.found ? "picked-place" : "picked-place muted"} data-testid="picked-place">
              {picked}: {place.text}
            </div>
          ) : null}
        </div>
      </div>
      <ol className="lane-blocks">
        {lane.blocks.map((block) => {
          const isHighlighted = block.gtid === highlighted;
          const tabStop = highlighted && lane.blocks.some((b) => b.gtid === highlighted) ? isHighlighted : block.index === 0;
          const isPicked = block.gtid === picked;
          const mark = marks[block.index] ?? null;
          return (
            <li
              key={block.gtid}
              tabIndex={tabStop ? 0 : -1}
              onKeyDown={(event) => (event.key === "Enter" ? onPick?.(block.gtid) : moveFocus(event))}
              onClick={() => onPick?.(block.gtid)}
              className={`block${isHighlighted ? " block-highlighted" : ""}${isPicked ? " block-picked" : ""}${block.sharedBy < laneCount ? " block-partial" : ""}${mark ? ` group group-${mark.place}` : ""}`}
              style={{ backgroundColor: domainColor(block.domain) }}
              data-gtid={block.gtid}
              data-highlighted={isHighlighted ? "true" : undefined}
              data-picked={isPicked ? "true" : undefined}
              data-group={mark?.id}
              aria-label={`GTID ${block.gtid}, domain ${block.domain}, seq ${block.seqNo}, position ${block.index + 1}${block.sharedBy < laneCount ? `, on ${block.sharedBy} of ${laneCount} servers` : ""}${mark ? `, committed by the master in one group of ${mark.size}` : ""}`}
              aria-current={isHighlighted ? "true" : undefined}
              onMouseEnter={() => onHighlight(block.gtid)}
              onMouseLeave={() => onHighlight(null)}
              onFocus={() => onHighlight(block.gtid)}
              onBlur={() => onHighlight(null)}
            >
              {block.label}
            </li>
          );
        })}
      </ol>
    </div>
  );
}

export function Lanes({ alignment, highlighted, onHighlight, groups, picked = null, onPick }: LanesProps) {
  const first = alignment.lanes[0]?.name ?? "";
  const where = highlighted ? alignment.positions.get(highlighted) : undefined;
  const region = useRef<HTMLDivElement>(null);
  const pickedShown = picked != null && alignment.positions.has(picked);
  useEffect(() => {
    // The lanes scroll together: bring the picked transaction into view.
    if (!picked) return;
    region.current?.querySelector(`[data-picked="true"]`)?.scrollIntoView?.({ block: "nearest", inline: "center" });
  }, [picked, pickedShown]);
  return (
    <>
      <p className="small" aria-live="polite">
        {highlighted && where
          ? `GTID ${highlighted}: ` +
            alignment.lanes
              .map((lane) => `${lane.name} ${where.has(lane.serverId) ? `#${where.get(lane.serverId)! + 1}` : "—"}`)
              .join(", ")
          : "Oldest on the left. Hover a transaction, or Tab to a lane and move with the arrow keys, to see it in every lane."}
      </p>
      <div className="lanes" ref={region}>
        {alignment.lanes.map((lane) => (
          <LaneRow
            key={lane.serverId}
            lane={lane}
            firstName={first}
            highlighted={highlighted}
            onHighlight={onHighlight}
            laneCount={alignment.lanes.length}
            marks={groups?.get(lane.serverId) ?? []}
            picked={picked}
            onPick={onPick}
          />
        ))}
      </div>
    </>
  );
}

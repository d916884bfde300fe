// The lanes of the interleavings view: one row per server, one block per transaction (coloured by domain and
// labelled `domain-seq`); hovering or focusing a block highlights the same GTID in every lane. Each lane is one
// Tab stop; the arrow keys, Home and End move along it.
import type { KeyboardEvent } from "react";
import type { Alignment, Lane } from "./align";
import { domainColor } from "./domainColors";

interface LanesProps {
  alignment: Alignment;
  highlighted: string | null;
  onHighlight: (gtid: string | null) => void;
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

function LaneRow({ lane, firstName, highlighted, onHighlight, laneCount }: { lane: Lane; firstName: string } & Omit<LanesProps, "alignment"> & { laneCount: number }) {
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
                <div>{lane.sameInterleavingAsFirst ? `= same interleaving as ${firstName}` : `≠ interleaving differs from ${firstName}`}</div>
              )}
            </>
          )}
        </div>
      </div>
      <ol className="lane-blocks">
        {lane.blocks.map((block) => {
          const isHighlighted = block.gtid === highlighted;
          const tabStop = highlighted && lane.blocks.some((b) => b.gtid === highlighted) ? isHighlighted : block.index === 0;
          return (
            <li
              key={block.gtid}
              tabIndex={tabStop ? 0 : -1}
              onKeyDown={moveFocus}
              className={`block${isHighlighted ? " block-highlighted" : ""}${block.sharedBy < laneCount ? " block-partial" : ""}`}
              style={{ backgroundColor: domainColor(block.domain) }}
              data-gtid={block.gtid}
              data-highlighted={isHighlighted ? "true" : undefined}
              aria-label={`GTID ${block.gtid}, domain ${block.domain}, seq ${block.seqNo}, position ${block.index + 1}${block.sharedBy < laneCount ? `, on ${block.sharedBy} of ${laneCount} servers` : ""}`}
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

export function Lanes({ alignment, highlighted, onHighlight }: LanesProps) {
  const first = alignment.lanes[0]?.name ?? "";
  const where = highlighted ? alignment.positions.get(highlighted) : undefined;
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
      <div className="lanes">
        {alignment.lanes.map((lane) => (
          <LaneRow
            key={lane.serverId}
            lane={lane}
            firstName={first}
            highlighted={highlighted}
            onHighlight={onHighlight}
            laneCount={alignment.lanes.length}
          />
        ))}
      </div>
    </>
  );
}

// The lanes of the interleavings view: one row per server, one block per transaction (coloured by domain and
// labelled `domain-seq`); hovering or focusing a block highlights the same GTID in every lane.
import type { Alignment, Lane } from "./align";
import { domainColor } from "./domainColors";

interface LanesProps {
  alignment: Alignment;
  highlighted: string | null;
  onHighlight: (gtid: string | null) => void;
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
          return (
            <li
              key={block.gtid}
              tabIndex={0}
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
          : "Oldest on the left. Hover or focus (Tab) a transaction to see it in every lane."}
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

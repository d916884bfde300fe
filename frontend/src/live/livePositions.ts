// Positions as the event stream says them, laid over the positions matrix the API stored: a `position` event moves
// its cell at once (the web process reads watched servers' positions every 0.25 s; the stored matrix follows the
// collector, up to a poll interval behind), and a matrix fetched later never takes a cell back to an older GTID the
// stream already showed. Each domain's "behind" and the most advanced position are recomputed from the cells; which
// servers could be master, and lag seconds, stay as the API computed them until the next fetch.
import type { Schemas } from "../api/client";

type PositionMatrix = Schemas["PositionMatrix"];
type PositionEvent = Schemas["PositionEvent"];

/** What the stream said of one server in one domain, and when (ms). */
interface Seen {
  gtid: string;
  seqNo: number;
  at: number;
}

/** A position the stream said counts over a fetched one for this long (then what the API stored wins again). */
export const LIVE_FRESH_MS = 5_000;

const seenByCluster = new Map<number, Map<string, Seen>>();

const key = (serverId: number, domain: number) => `${serverId}:${domain}`;

/** Records a position event of `clusterId` (the newest said, per server and domain). */
export function recordPosition(clusterId: number, event: PositionEvent, now: number): void {
  const seqNo = event.seq_no ?? Number(event.gtid.split("-")[2]);
  if (!Number.isSafeInteger(seqNo)) return;
  let seen = seenByCluster.get(clusterId);
  if (seen === undefined) {
    seen = new Map();
    seenByCluster.set(clusterId, seen);
  }
  seen.set(key(event.server_id, event.domain), { gtid: event.gtid, seqNo, at: now });
}

/** Forgets what the stream said of `clusterId` (its page closed). */
export function forgetPositions(clusterId: number): void {
  seenByCluster.delete(clusterId);
}

/** The matrix with `clusterId`'s positions the stream said within LIVE_FRESH_MS laid over it (the same object when
 * nothing is newer). */
export function withLivePositions(clusterId: number, matrix: PositionMatrix, now: number): PositionMatrix {
  const seen = seenByCluster.get(clusterId);
  return seen === undefined ? matrix : overlay(matrix, seen, now);
}

/** The matrix with every fresh `seen` position newer than its cell put in it, and each changed domain's "behind"
 * and most advanced GTID recomputed. Pure. */
export function overlay(matrix: PositionMatrix, seen: ReadonlyMap<string, Seen>, now: number): PositionMatrix {
  const changedDomains = new Set<number>();
  const rows = matrix.rows.map((row) => {
    let cells: PositionMatrix["rows"][number]["cells"] | null = null;
    for (const domain of matrix.domains) {
      const cell = row.cells[String(domain)];
      const said = seen.get(key(row.server_id, domain));
      if (cell === undefined || said === undefined || now - said.at > LIVE_FRESH_MS) continue;
      if (cell.seq_no !== null && cell.seq_no !== undefined && cell.seq_no >= said.seqNo) continue;
      cells = cells ?? { ...row.cells };
      cells[String(domain)] = { ...cell, gtid: said.gtid, seq_no: said.seqNo };
      changedDomains.add(domain);
    }
    if (cells === null) return row;
    return { ...row, cells, gtid_current_pos: joinPosition(row.gtid_current_pos, cells, matrix.domains) };
  });
  if (changedDomains.size === 0) return matrix;
  const best = new Map<number, { gtid: string; seqNo: number }>();
  for (const row of rows) {
    for (const domain of matrix.domains) {
      const cell = row.cells[String(domain)];
      if (cell?.gtid && cell.seq_no !== null && cell.seq_no !== undefined) {
        const current = best.get(domain);
        if (current === undefined || cell.seq_no > current.seqNo) {
          best.set(domain, { gtid: cell.gtid, seqNo: cell.seq_no });
        }
      }
    }
  }
  const recomputed = rows.map((row) => {
    let cells: PositionMatrix["rows"][number]["cells"] | null = null;
    for (const domain of changedDomains) {
      const cell = row.cells[String(domain)];
      const top = best.get(domain);
      if (cell === undefined || top === undefined) continue;
      const behind = top.seqNo - (cell.seq_no ?? 0);
      if (behind !== cell.behind_transactions) {
        cells = cells ?? { ...row.cells };
        cells[String(domain)] = { ...cell, behind_transactions: Math.max(0, behind) };
      }
    }
    return cells === null ? row : { ...row, cells };
  });
  const mostAdvanced = [...best.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, top]) => top.gtid)
    .join(",");
  return { ...matrix, rows: recomputed, most_advanced: mostAdvanced };
}

/** A server's gtid_current_pos with its domains' GTIDs taken from its cells (domains it has no cell for kept). */
function joinPosition(
  position: string | null,
  cells: PositionMatrix["rows"][number]["cells"],
  domains: number[],
): string | null {
  const byDomain = new Map<number, string>();
  for (const gtid of (position ?? "").split(",").filter(Boolean)) byDomain.set(Number(gtid.split("-")[0]), gtid);
  for (const domain of domains) {
    const gtid = cells[String(domain)]?.gtid;
    if (gtid) byDomain.set(domain, gtid);
  }
  return byDomain.size === 0 ? position : [...byDomain.entries()].sort(([a], [b]) => a - b).map(([, g]) => g).join(",");
}

// Positions as the event stream says them, laid over what the API stored: a `position` event moves the positions
// matrix's cell and the server's gtid_current_pos in the servers list and the topology at once (the web process
// reads watched servers' positions every 0.25 s; what is stored follows the collector, up to a poll interval
// behind), and data fetched later never takes a position back to an older GTID the stream already showed. The
// matrix's "behind" per domain and most advanced position are recomputed from its cells; which servers could be
// master, and lag seconds, stay as the API computed them until the next fetch.
import type { Schemas } from "../api/client";

type PositionMatrix = Schemas["PositionMatrix"];
type PositionEvent = Schemas["PositionEvent"];
type Topology = Schemas["TopologyGraph"];

/** What the stream said of one server in one domain, and when (ms). */
interface Seen {
  gtid: string;
  seqNo: number;
  at: number;
}

/** A position the stream said counts over a fetched one for this long (then what the API stored wins again). */
export const LIVE_FRESH_MS = 5_000;

/** What the stream said of a server in a domain, if anything. */
export type SeenLookup = (serverId: number, domain: number) => Seen | undefined;

const seenByCluster = new Map<number, Map<number, Map<number, Seen>>>(); // cluster → server → domain

/** Records a position event of `clusterId` (per server and domain the furthest said within LIVE_FRESH_MS). */
export function recordPosition(clusterId: number, event: PositionEvent, now: number): void {
  const seqNo = event.seq_no ?? Number(event.gtid.split("-")[2]);
  if (!Number.isSafeInteger(seqNo)) return;
  let servers = seenByCluster.get(clusterId);
  if (servers === undefined) {
    servers = new Map();
    seenByCluster.set(clusterId, servers);
  }
  let domains = servers.get(event.server_id);
  if (domains === undefined) {
    domains = new Map();
    servers.set(event.server_id, domains);
  }
  const said = domains.get(event.domain);
  if (said !== undefined && said.seqNo > seqNo && now - said.at <= LIVE_FRESH_MS) return; // never back
  domains.set(event.domain, { gtid: event.gtid, seqNo, at: now });
}

/** Forgets what the stream said of `clusterId` (its page closed). */
export function forgetPositions(clusterId: number): void {
  seenByCluster.delete(clusterId);
}

/** The matrix with `clusterId`'s positions the stream said within LIVE_FRESH_MS laid over it (the same object when
 * nothing is newer). */
export function withLivePositions(clusterId: number, matrix: PositionMatrix, now: number): PositionMatrix {
  const servers = seenByCluster.get(clusterId);
  return servers === undefined ? matrix : overlay(matrix, (server, domain) => servers.get(server)?.get(domain), now);
}

/** `position` (a server's gtid_current_pos as stored) with the domains the stream said newer within LIVE_FRESH_MS. */
export function livePosition(clusterId: number, serverId: number, position: string | null, now: number): string | null {
  const domains = seenByCluster.get(clusterId)?.get(serverId);
  if (domains === undefined) return position;
  const byDomain = parsePosition(position);
  let changed = false;
  for (const [domain, said] of domains) {
    const stored = byDomain.get(domain);
    if (now - said.at <= LIVE_FRESH_MS && (stored === undefined || stored.seqNo < said.seqNo)) {
      byDomain.set(domain, said);
      changed = true;
    }
  }
  return changed ? formatPosition(byDomain) : position;
}

/** Items naming a server (by `serverId`) with their `gtid_current_pos` moved as the stream said (the same array when
 * none moved). */
export function withLiveServers<T extends { gtid_current_pos?: string | null }>(
  clusterId: number,
  items: T[],
  serverId: (item: T) => number,
  now: number,
): T[] {
  if (!seenByCluster.has(clusterId)) return items;
  let changed = false;
  const moved = items.map((item) => {
    const stored = item.gtid_current_pos ?? null;
    const position = livePosition(clusterId, serverId(item), stored, now);
    if (position === stored) return item;
    changed = true;
    return { ...item, gtid_current_pos: position };
  });
  return changed ? moved : items;
}

/** The topology with its servers' positions moved as the stream said (the same object when none moved). */
export function withLiveTopology(clusterId: number, topology: Topology, now: number): Topology {
  const nodes = withLiveServers(clusterId, topology.nodes, (node) => node.server_id, now);
  return nodes === topology.nodes ? topology : { ...topology, nodes };
}

function parsePosition(position: string | null): Map<number, { gtid: string; seqNo: number }> {
  const byDomain = new Map<number, { gtid: string; seqNo: number }>();
  for (const gtid of (position ?? "").split(",").map((part) => part.trim())) {
    const [domain, , seqNo] = gtid.split("-").map(Number);
    if (gtid && domain !== undefined && seqNo !== undefined) byDomain.set(domain, { gtid, seqNo });
  }
  return byDomain;
}

function formatPosition(byDomain: Map<number, { gtid: string }>): string {
  return [...byDomain.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, said]) => said.gtid)
    .join(",");
}

/** The matrix with every fresh `seen` position newer than its cell put in it, and each changed domain's "behind"
 * and most advanced GTID recomputed. Pure. */
export function overlay(matrix: PositionMatrix, seen: SeenLookup, now: number): PositionMatrix {
  const changedDomains = new Set<number>();
  const rows = matrix.rows.map((row) => {
    let cells: PositionMatrix["rows"][number]["cells"] | null = null;
    for (const domain of matrix.domains) {
      const cell = row.cells[String(domain)];
      const said = seen(row.server_id, domain);
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
  const byDomain = parsePosition(position);
  for (const domain of domains) {
    const cell = cells[String(domain)];
    if (cell?.gtid && cell.seq_no !== null && cell.seq_no !== undefined) {
      byDomain.set(domain, { gtid: cell.gtid, seqNo: cell.seq_no });
    }
  }
  return byDomain.size === 0 ? position : formatPosition(byDomain);
}

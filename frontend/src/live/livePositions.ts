// Positions as the event stream says them, laid over the topology's servers: a `position` event moves a server's
// gtid_current_pos in the graph at once (the web process reads watched servers' positions every 0.25 s; what is
// stored follows the collector, up to a poll interval behind), and a topology fetched later never takes a position
// back to an older GTID the stream already showed. Nothing here is laid over the positions matrix or the servers
// list: each of their rows is one poll's snapshot with the verdicts computed from it (a live cell beside an older
// snapshot's "could be master" or gtid_binlog_pos would contradict it); a position event refetches them instead.
import { formatPosition, parseGtid, parsePosition } from "../lib/gtid";
import type { Schemas } from "../api/client";

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

const seenByCluster = new Map<number, Map<number, Map<number, Seen>>>(); // cluster → server → domain

/** Records a position event of `clusterId` (per server and domain the furthest said within LIVE_FRESH_MS). */
export function recordPosition(clusterId: number, event: PositionEvent, now: number): void {
  const seqNo = event.seq_no ?? parseGtid(event.gtid)?.seq ?? NaN;
  if (!Number.isSafeInteger(seqNo)) return;
  let servers = seenByCluster.get(clusterId);
  if (servers === undefined) {
    servers = new Map();
    seenByCluster.set(clusterId, servers);
  }
  let domains = servers.get(event.registered_server_id);
  if (domains === undefined) {
    domains = new Map();
    servers.set(event.registered_server_id, domains);
  }
  const said = domains.get(event.domain);
  if (said !== undefined && said.seqNo > seqNo && now - said.at <= LIVE_FRESH_MS) return; // never back
  domains.set(event.domain, { gtid: event.gtid, seqNo, at: now });
}

/** Forgets what the stream said of `clusterId` (its page closed). */
export function forgetPositions(clusterId: number): void {
  seenByCluster.delete(clusterId);
}

/** `position` (a server's gtid_current_pos as stored) with the domains the stream said newer within LIVE_FRESH_MS. */
export function livePosition(clusterId: number, serverId: number, position: string | null, now: number): string | null {
  const domains = seenByCluster.get(clusterId)?.get(serverId);
  if (domains === undefined) return position;
  const byDomain = parsedPosition(position);
  let changed = false;
  for (const [domain, said] of domains) {
    const stored = byDomain.get(domain);
    if (now - said.at <= LIVE_FRESH_MS && (stored === undefined || stored.seqNo < said.seqNo)) {
      byDomain.set(domain, said);
      changed = true;
    }
  }
  return changed ? formattedPosition(byDomain) : position;
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
  const nodes = withLiveServers(clusterId, topology.nodes, (node) => node.registered_server_id, now);
  return nodes === topology.nodes ? topology : { ...topology, nodes };
}

function parsedPosition(position: string | null): Map<number, { gtid: string; seqNo: number }> {
  return new Map([...parsePosition(position)].map(([domain, g]) => [domain, { gtid: g.text, seqNo: g.seq }]));
}

function formattedPosition(byDomain: Map<number, { gtid: string }>): string {
  return formatPosition(new Map([...byDomain].map(([domain, said]) => [domain, { text: said.gtid }])));
}

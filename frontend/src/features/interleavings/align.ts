// Lines up the servers' recent binlogs for the interleavings view (a pure function): one lane per server, each block
// labelled `domain-seq`, and one column per GTID shared by every lane (`columnOrder`), so a GTID several servers hold
// sits at the same place in each lane and each domain's order reads across the lanes; where each GTID sits in every
// server's binlog (for hover highlight); whether each lane keeps every domain's order; and whether the lanes
// interleave the domains differently.
import type { Schemas } from "../../api/client";

type ServerEvents = Schemas["ServerEvents"];
type NeverReceived = Schemas["NeverReceived"];

export interface LaneBlock {
  gtid: string;
  domain: number;
  seqNo: number;
  originServerId: number;
  /** `domain-seq`, what the block shows. */
  label: string;
  /** Place in the server's binlog, 0 = oldest shown. */
  index: number;
  /** The column it sits in, the same in every lane that holds it (0 = leftmost). */
  column: number;
  /** Transactions the server committed in one group share it. */
  commitId: number | null;
  /** How many lanes hold this GTID. */
  sharedBy: number;
}

export interface Lane {
  serverId: number;
  name: string;
  error: string | null;
  /** In column order (left to right); `index` gives each block's place in the server's binlog. */
  blocks: LaneBlock[];
  /** The binlog's order is the columns' order (false: where the lanes disagree, this lane's blocks cross). */
  inColumnOrder: boolean;
  /** The server's position per domain (seq_no reached), as the collector last read it. */
  position: ReadonlyMap<number, number>;
  /** The (domain, origin) pairs among those shown this server will never receive, and why. */
  never: readonly NeverReceived[];
  /** Within every domain, seq_no increases along the lane (the order each domain must keep). */
  domainOrderKept: boolean;
  /** Whether this lane interleaves the transactions as the first lane does over the stretch both show (see
   * `compareInterleaving`); null for the first lane. */
  sameInterleavingAsFirst: boolean | null;
  /** Why it differs, in words; null when it does not. */
  interleavingNote: string | null;
  /** It holds a GTID the first lane holds too (true for the first lane): without one there is nothing to compare. */
  overlapsFirst: boolean;
  /** Per domain, the transactions it lacks of the window's newest end (the server's figure, from positions). */
  behind: Readonly<Record<string, number>>;
  /** The server's read stopped at the window's bound before the window's start. */
  truncated: boolean;
}

export interface Alignment {
  lanes: Lane[];
  /** The GTID of each column, left to right: oldest first, each lane's order kept where the lanes agree. */
  columns: string[];
  /** GTID → its column. */
  columnOf: Map<string, number>;
  /** Every domain seen on any server (before the filter), ascending: the filter's choices. */
  domains: number[];
  /** GTID → (server id → index of its block in that lane). */
  positions: Map<string, Map<number, number>>;
  /** Some lane orders the shared GTIDs differently from the first: the domains interleave differently. */
  interleavingsDiffer: boolean;
}

/** Aligns the lanes; `domains` (if given and not empty) keeps only those domains' transactions. */
export function alignLanes(servers: readonly ServerEvents[], domains?: readonly number[] | null): Alignment {
  const allDomains = new Set<number>();
  const keep = domains && domains.length > 0 ? new Set(domains) : null;
  const holders = new Map<string, number>();

  const ordered = servers.map((server) => {
    const seen = new Set<string>();
    const transactions = [...server.transactions].reverse().filter((t) => {
      allDomains.add(t.domain);
      if (keep && !keep.has(t.domain)) return false;
      if (seen.has(t.gtid)) return false; // a binlog holds a GTID once; be safe against a repeated row
      seen.add(t.gtid);
      return true;
    });
    for (const gtid of seen) holders.set(gtid, (holders.get(gtid) ?? 0) + 1);
    return { server, transactions };
  });

  const columns = columnOrder(
    ordered.map(({ transactions }) => transactions.map((t) => ({ gtid: t.gtid, domain: t.domain, seqNo: t.seq_no, commitTs: t.commit_ts_us }))),
  );
  const columnOf = new Map(columns.map((gtid, column) => [gtid, column]));
  const positions = new Map<string, Map<number, number>>();
  const lanes: Lane[] = ordered.map(({ server, transactions }) => {
    const inBinlogOrder = transactions.map<LaneBlock>((t, index) => {
      let where = positions.get(t.gtid);
      if (!where) positions.set(t.gtid, (where = new Map()));
      where.set(server.registered_server_id, index);
      return {
        gtid: t.gtid,
        domain: t.domain,
        seqNo: t.seq_no,
        originServerId: t.origin_server_id,
        label: `${t.domain}-${t.seq_no}`,
        index,
        column: columnOf.get(t.gtid)!,
        commitId: t.commit_id,
        sharedBy: holders.get(t.gtid) ?? 1,
      };
    });
    const blocks = [...inBinlogOrder].sort((a, b) => a.column - b.column);
    return {
      serverId: server.registered_server_id,
      name: server.name,
      error: server.error ?? null,
      blocks,
      inColumnOrder: blocks.every((block, i) => block.index === i),
      position: new Map(Object.entries(server.position ?? {}).map(([domain, seq]) => [Number(domain), seq])),
      never: server.never ?? [],
      domainOrderKept: keepsDomainOrder(inBinlogOrder),
      sameInterleavingAsFirst: null,
      interleavingNote: null,
      overlapsFirst: true,
      behind: server.behind ?? {},
      truncated: server.truncated ?? false,
    };
  });

  const first = lanes[0];
  let interleavingsDiffer = false;
  if (first) {
    const binlogOrder = (lane: Lane) => [...lane.blocks].sort((a, b) => a.index - b.index);
    const inFirst = new Set(first.blocks.map((block) => block.gtid));
    for (const lane of lanes.slice(1)) {
      const comparison = compareInterleaving(binlogOrder(first), binlogOrder(lane));
      lane.sameInterleavingAsFirst = comparison.same;
      lane.interleavingNote = comparison.note;
      lane.overlapsFirst = lane.blocks.some((block) => inFirst.has(block.gtid));
      if (!comparison.same && lane.overlapsFirst) interleavingsDiffer = true;
    }
  }
  return { lanes, columns, columnOf, domains: [...allDomains].sort((a, b) => a - b), positions, interleavingsDiffer };
}

export interface ColumnInput {
  gtid: string;
  domain: number;
  seqNo: number;
  /** Commit time as the server gives it (None: unknown); only breaks ties between GTIDs that may go first. */
  commitTs?: number | null;
}

/** One order of every GTID the lanes hold (each lane oldest first), for the columns: within a domain by seq_no
 * always; and wherever the lanes agree, each lane's own order, so a lane's blocks read left to right in its binlog's
 * order. A GTID goes next when it is the lowest of its domain not placed yet and the next one of every lane that
 * holds it (the earliest committed first, then the first lane's); when the lanes disagree (two servers interleaved
 * the same transactions differently) the first lane's next one goes, and the other lane's blocks cross there. */
export function columnOrder(lanes: readonly (readonly ColumnInput[])[]): string[] {
  const info = new Map<string, { domain: number; seqNo: number; ts: number; lanes: number[] }>();
  lanes.forEach((lane, l) =>
    lane.forEach((t) => {
      const known = info.get(t.gtid);
      const ts = t.commitTs ?? Number.POSITIVE_INFINITY;
      if (known) {
        if (!known.lanes.includes(l)) known.lanes.push(l);
        known.ts = Math.min(known.ts, ts);
      } else info.set(t.gtid, { domain: t.domain, seqNo: t.seqNo, ts, lanes: [l] });
    }),
  );
  // Each domain's GTIDs by seq_no: the next of a domain is the first not placed.
  const byDomain = new Map<number, string[]>();
  for (const [gtid, t] of info) byDomain.set(t.domain, [...(byDomain.get(t.domain) ?? []), gtid]);
  for (const list of byDomain.values())
    list.sort((a, b) => info.get(a)!.seqNo - info.get(b)!.seqNo || (a < b ? -1 : a > b ? 1 : 0));
  const domainNext = new Map([...byDomain.keys()].map((d) => [d, 0]));
  const heads = lanes.map(() => 0);
  const placed = new Set<string>();
  const order: string[] = [];
  const headOf = (l: number) => {
    const lane = lanes[l]!;
    while (heads[l]! < lane.length && placed.has(lane[heads[l]!]!.gtid)) heads[l]! += 1;
    return lane[heads[l]!]?.gtid;
  };
  const lowestOfDomain = (gtid: string) => {
    const domain = info.get(gtid)!.domain;
    return byDomain.get(domain)![domainNext.get(domain)!] === gtid;
  };
  while (order.length < info.size) {
    const laneHeads = lanes.map((_, l) => headOf(l));
    const eligible = laneHeads.filter((gtid): gtid is string => gtid !== undefined && lowestOfDomain(gtid));
    const ready = eligible.filter((gtid) => info.get(gtid)!.lanes.every((l) => laneHeads[l] === gtid));
    let next: string | undefined;
    if (ready.length > 0) next = ready.reduce((best, gtid) => (info.get(gtid)!.ts < info.get(best)!.ts ? gtid : best));
    else next = eligible[0];
    if (next === undefined) {
      // No lane's next is the lowest of its domain (a lane out of domain order): take the lowest of some domain.
      const domain = [...byDomain.keys()].find((d) => domainNext.get(d)! < byDomain.get(d)!.length)!;
      next = byDomain.get(domain)![domainNext.get(domain)!]!;
    }
    placed.add(next);
    order.push(next);
    const domain = info.get(next)!.domain;
    const list = byDomain.get(domain)!;
    let i = domainNext.get(domain)!;
    while (i < list.length && placed.has(list[i]!)) i += 1;
    domainNext.set(domain, i);
  }
  return order;
}

/** seq_no strictly increases within each domain along the blocks. */
export function keepsDomainOrder(blocks: readonly Pick<LaneBlock, "domain" | "seqNo">[]): boolean {
  const last = new Map<number, number>();
  for (const block of blocks) {
    const previous = last.get(block.domain);
    if (previous !== undefined && block.seqNo <= previous) return false;
    last.set(block.domain, block.seqNo);
  }
  return true;
}

/** The GTIDs both lanes hold appear in the same order in both. */
export function sameSharedOrder(a: readonly Pick<LaneBlock, "gtid">[], b: readonly Pick<LaneBlock, "gtid">[]): boolean {
  const inB = new Set(b.map((block) => block.gtid));
  const inA = new Set(a.map((block) => block.gtid));
  const sharedA = a.filter((block) => inB.has(block.gtid)).map((block) => block.gtid);
  const sharedB = b.filter((block) => inA.has(block.gtid)).map((block) => block.gtid);
  return sharedA.length === sharedB.length && sharedA.every((gtid, i) => gtid === sharedB[i]);
}

type Block = Pick<LaneBlock, "gtid" | "domain">;

/** Domains of the blocks between the first and the last block the other lane also holds that it does not hold. */
function unsharedInside(blocks: readonly Block[], other: ReadonlySet<string>): number[] {
  const first = blocks.findIndex((block) => other.has(block.gtid));
  if (first < 0) return [];
  let last = blocks.length - 1;
  while (!other.has(blocks[last]!.gtid)) last -= 1;
  const domains = new Set<number>();
  for (const block of blocks.slice(first, last + 1)) if (!other.has(block.gtid)) domains.add(block.domain);
  return [...domains].sort((a, b) => a - b);
}

/** Lane `b` interleaves like lane `a` when, over the stretch both lanes show (from the first to the last GTID they
 * share), they hold the same transactions in the same order. A lane that holds transactions the other does not
 * in that stretch (a multi-source replica beside one of its masters, a filtered replica) interleaves differently
 * even where the GTIDs they share keep their order; outside the stretch, a shorter recent window is no difference.
 */
export function compareInterleaving(a: readonly Block[], b: readonly Block[]): { same: boolean; note: string | null } {
  if (!sameSharedOrder(a, b)) return { same: false, note: "orders the transactions both hold differently" };
  const onlyB = unsharedInside(b, new Set(a.map((block) => block.gtid)));
  const onlyA = unsharedInside(a, new Set(b.map((block) => block.gtid)));
  const notes = [];
  if (onlyB.length > 0) notes.push(`interleaves transactions the first lane does not hold (domain ${onlyB.join(", ")})`);
  if (onlyA.length > 0) notes.push(`lacks transactions the first lane interleaves (domain ${onlyA.join(", ")})`);
  return notes.length > 0 ? { same: false, note: notes.join("; ") } : { same: true, note: null };
}

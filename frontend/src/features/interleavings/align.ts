// Lines up the servers' recent binlogs for the interleavings view (a pure function): one lane per server, oldest
// transaction first, each block labelled `domain-seq`; where each GTID sits in every lane (for hover highlight);
// whether each lane keeps every domain's order; and whether the lanes interleave the domains differently.
import type { Schemas } from "../../api/client";

type ServerEvents = Schemas["ServerEvents"];

export interface LaneBlock {
  gtid: string;
  domain: number;
  seqNo: number;
  originServerId: number;
  /** `domain-seq`, what the block shows. */
  label: string;
  /** Place in the lane, 0 = oldest shown. */
  index: number;
  /** Transactions the server committed in one group share it. */
  commitId: number | null;
  /** How many lanes hold this GTID. */
  sharedBy: number;
}

export interface Lane {
  serverId: number;
  name: string;
  error: string | null;
  blocks: LaneBlock[];
  /** Within every domain, seq_no increases along the lane (the order each domain must keep). */
  domainOrderKept: boolean;
  /** Whether this lane interleaves the transactions as the first lane does over the stretch both show (see
   * `compareInterleaving`); null for the first lane. */
  sameInterleavingAsFirst: boolean | null;
  /** Why it differs, in words; null when it does not. */
  interleavingNote: string | null;
}

export interface Alignment {
  lanes: Lane[];
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

  const positions = new Map<string, Map<number, number>>();
  const lanes: Lane[] = ordered.map(({ server, transactions }) => {
    const blocks = transactions.map<LaneBlock>((t, index) => {
      let where = positions.get(t.gtid);
      if (!where) positions.set(t.gtid, (where = new Map()));
      where.set(server.server_id, index);
      return {
        gtid: t.gtid,
        domain: t.domain,
        seqNo: t.seq_no,
        originServerId: t.origin_server_id,
        label: `${t.domain}-${t.seq_no}`,
        index,
        commitId: t.commit_id,
        sharedBy: holders.get(t.gtid) ?? 1,
      };
    });
    return {
      serverId: server.server_id,
      name: server.name,
      error: server.error ?? null,
      blocks,
      domainOrderKept: keepsDomainOrder(blocks),
      sameInterleavingAsFirst: null,
      interleavingNote: null,
    };
  });

  const first = lanes[0];
  let interleavingsDiffer = false;
  if (first) {
    for (const lane of lanes.slice(1)) {
      const comparison = compareInterleaving(first.blocks, lane.blocks);
      lane.sameInterleavingAsFirst = comparison.same;
      lane.interleavingNote = comparison.note;
      if (!comparison.same) interleavingsDiffer = true;
    }
  }
  return { lanes, domains: [...allDomains].sort((a, b) => a - b), positions, interleavingsDiffer };
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

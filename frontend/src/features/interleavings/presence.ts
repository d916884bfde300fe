// Whether a server holds a GTID, and if not, why (a pure function): here (its place in the server's binlog); never
// (the server does not receive that domain from that origin — not downstream of it, or a connection's filter drops it
// — as the backend works out from the replication graph); not yet (the server is behind it in that domain: it will
// arrive); older than what is shown; or unknown (the server's binlog could not be read).
import { parseGtid } from "../../lib/gtid";
import type { Lane, LaneBlock } from "./align";

export type Presence =
  | { kind: "here"; block: LaneBlock; text: string }
  | { kind: "never"; text: string; reason: string }
  | { kind: "not-yet"; text: string }
  | { kind: "older"; text: string }
  | { kind: "unknown"; text: string };

/** Short words for a cell where the lane lacks the GTID. */
export const ABSENT_SHORT: Record<Exclude<Presence["kind"], "here">, string> = {
  never: "never",
  "not-yet": "not yet",
  older: "older",
  unknown: "?",
};

/** A block's GTID as presence compares it: its domain, the server it came from, its seq_no (NaN when malformed). */
export function gtidParts(gtid: string): { domain: number; origin: number; seq: number } {
  const parsed = parseGtid(gtid);
  return parsed === null ? { domain: NaN, origin: NaN, seq: NaN } : { domain: parsed.domain, origin: parsed.server, seq: parsed.seq };
}

type LaneFacts = Pick<Lane, "blocks" | "error" | "never" | "position">;

export function presenceOf(lane: LaneFacts, gtid: string): Presence {
  const found = lane.blocks.find((block) => block.gtid === gtid);
  if (found) return { kind: "here", block: found, text: `#${found.index + 1} of ${lane.blocks.length}` };
  const { domain, origin, seq } = gtidParts(gtid);
  const never = lane.never.find((n) => n.domain === domain && n.origin_server_id === origin);
  if (never) return { kind: "never", reason: never.reason, text: `never here: ${never.reason}` };
  if (lane.error) return { kind: "unknown", text: `unknown: its binlog could not be read (${lane.error})` };
  const seen = lane.blocks.filter((block) => block.domain === domain).map((block) => block.seqNo);
  const position = lane.position.get(domain);
  const reached = Math.max(...seen, position ?? Number.NEGATIVE_INFINITY);
  if (reached < seq) {
    return {
      kind: "not-yet",
      text: Number.isFinite(reached) ? `not here yet (at seq ${reached} of domain ${domain})` : "not here yet",
    };
  }
  return { kind: "older", text: "not among the transactions shown (older, or not on this server)" };
}

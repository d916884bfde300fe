// The dashboard's one reading of MariaDB-style GTID text: a GTID is `domain-server-seq` (three non-negative integers),
// a position is GTIDs joined by commas, at most one per domain. Every page that looks inside a GTID or a position
// uses these, so a malformed part is treated the same way everywhere: left out, never half-read.

export interface Gtid {
  domain: number;
  server: number;
  seq: number;
  /** The text as given (trimmed). */
  text: string;
}

const GTID = /^(\d+)-(\d+)-(\d+)$/;

/** "1-2-45" → {domain 1, server 2, seq 45}; null for anything else (or a number beyond the safe integers). */
export function parseGtid(text: string): Gtid | null {
  const trimmed = text.trim();
  const match = GTID.exec(trimmed);
  if (match === null) return null;
  const [domain, server, seq] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (![domain, server, seq].every(Number.isSafeInteger)) return null;
  return { domain, server, seq, text: trimmed };
}

/** "1-1-45,2-1-20" → domain → its GTID (a malformed part is left out; the last of a domain wins). */
export function parsePosition(position: string | null | undefined): Map<number, Gtid> {
  const found = new Map<number, Gtid>();
  for (const part of (position ?? "").split(",")) {
    const gtid = parseGtid(part);
    if (gtid !== null) found.set(gtid.domain, gtid);
  }
  return found;
}

/** The position text of GTIDs by domain, in domain order. */
export function formatPosition(byDomain: Map<number, { text: string }>): string {
  return [...byDomain.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, gtid]) => gtid.text)
    .join(",");
}

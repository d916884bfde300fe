// What the server page gathers about one server from the cluster's data — pure, tested: its positions per domain
// (from its gtid_binlog_pos / gtid_slave_pos / gtid_current_pos), the operations that named it, the audit rows about it.
import type { Schemas } from "../../api/client";
import { parsePosition } from "../../lib/gtid";

export interface DomainPositions {
  domain: number;
  binlog: string | null;
  slave: string | null;
  current: string | null;
}

/** "1-1-45,2-1-20" → {1: "1-1-45", 2: "2-1-20"} (a malformed part is skipped). */
export function byDomain(position: string | null | undefined): Map<number, string> {
  return new Map([...parsePosition(position)].map(([domain, gtid]) => [domain, gtid.text]));
}

/** One row per domain any of the three positions has, in domain order. */
export function domainPositions(server: {
  gtid_binlog_pos?: string | null;
  gtid_slave_pos?: string | null;
  gtid_current_pos?: string | null;
}): DomainPositions[] {
  const binlog = byDomain(server.gtid_binlog_pos);
  const slave = byDomain(server.gtid_slave_pos);
  const current = byDomain(server.gtid_current_pos);
  const domains = [...new Set([...binlog.keys(), ...slave.keys(), ...current.keys()])].sort((a, b) => a - b);
  return domains.map((domain) => ({
    domain,
    binlog: binlog.get(domain) ?? null,
    slave: slave.get(domain) ?? null,
    current: current.get(domain) ?? null,
  }));
}

/** Whether an operation named the server: in a `…server_id` parameter, or as the old or new master of its result. */
export function operationTouches(operation: Schemas["OperationRead"], serverId: number): boolean {
  const params = (operation.params ?? {}) as Record<string, unknown>;
  if (Object.entries(params).some(([key, value]) => key.endsWith("server_id") && value === serverId)) return true;
  const result = (operation.result ?? {}) as Record<string, unknown>;
  return result.old_master_registered_server_id === serverId || result.new_master_registered_server_id === serverId;
}

/** Whether an audit row is about the server: its path names it (`registered_server_id`; rows written before the
 * path parameter was renamed name it `server_id`). */
export function auditTouches(entry: Schemas["AuditEntryRead"], serverId: number): boolean {
  const details = (entry.details ?? {}) as { path_params?: Record<string, string> };
  const path = details.path_params ?? {};
  return entry.registered_server_id === serverId || (path.registered_server_id ?? path.server_id) === String(serverId);
}

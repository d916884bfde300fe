// A replication connection's state in words and a tone (a pure function): IO and SQL errors, stopped sides,
// reconnecting, waiting for relay log space, a SQL side stalled while work waits (with the server's reason), delayed by
// configuration, or replicating; used by the graph's edges and the
// connections table.
import type { Schemas } from "../../api/client";
import type { Tone } from "../../components/StatusBadge";

type Edge = Schemas["TopologyEdge"];

export interface ConnectionState {
  tone: Tone;
  /** Short words: "replicating", "IO error", "SQL stopped"… */
  text: string;
  /** The worst lag over domains in the API's words ("30 s (delay 30 s, +0 s) · 445 txn"), or null. */
  lag: string | null;
  /** Why, in the server's own words, where it gives them (a stall's lock wait). */
  reason?: string;
}

export function connectionState(edge: Edge): ConnectionState {
  // The API's own figure and words (judged against the configured delay once, on the server).
  const lag = edge.worst_lag?.words ?? null;
  if (edge.source === "master") return { tone: "muted", text: "seen by the master only", lag };
  const io = edge.io_state ?? "unknown";
  const sql = edge.sql_state ?? "unknown";
  if (io === "error" || sql === "error" || edge.last_error_code) {
    const side = io === "error" ? "IO" : sql === "error" ? "SQL" : "replication";
    return { tone: "bad", text: `${side} error${edge.last_error_code ? ` ${edge.last_error_code}` : ""}`, lag };
  }
  if (!edge.running || io === "stopped" || sql === "stopped") {
    const which = io === "stopped" && sql === "stopped" ? "stopped" : io === "stopped" ? "IO stopped" : sql === "stopped" ? "SQL stopped" : "stopped";
    return { tone: "warn", text: which, lag };
  }
  if (io === "reconnecting" || io === "connecting") return { tone: "warn", text: `IO ${io}`, lag };
  if (edge.waiting_for_relay_space) return { tone: "warn", text: "IO waiting for relay log space", lag };
  if (edge.stall) {
    const { domains, transactions_waiting, no_progress_s } = edge.stall;
    const where = `domain${domains.length > 1 ? "s" : ""} ${domains.join(", ")}`;
    const text = `stalled in ${where}: ${transactions_waiting} waiting, no progress for ${Math.round(no_progress_s)} s`;
    return { tone: "warn", text, lag, reason: edge.stall.reason ?? undefined };
  }
  const delay = edge.settings?.delay_s ?? 0;
  if (delay > 0) return { tone: "info", text: `delayed replica (${delay} s)`, lag };
  if (sql === "delaying") return { tone: "info", text: "delayed replica", lag };
  if (sql === "until_reached") return { tone: "info", text: "stopped at UNTIL", lag };
  return { tone: "ok", text: "replicating", lag };
}

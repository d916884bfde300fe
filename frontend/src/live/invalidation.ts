// Which cached queries a cluster event makes stale (a pure mapping, tested), so an event refreshes only the views
// it concerns. Events are the API's own types (`ClusterEventData`, discriminated by `event`), read from the stream by
// `parseEvent`.
import type { Schemas } from "../api/client";

export type ClusterEvent = Schemas["ClusterEventData"];

/** An event's data as the stream sent it under the name `name`, or null when it is not one (not JSON, or another
 * type than its name says). */
export function parseEvent(name: string, text: string): ClusterEvent | null {
  try {
    const data = JSON.parse(text) as ClusterEvent; // the stream's documented schema
    return data !== null && typeof data === "object" && data.event === name ? data : null;
  } catch {
    return null;
  }
}

/** Query-key suffixes after ["clusters", id] to refresh for an event. */
export function staleQueries(event: ClusterEvent): (string | number)[][] {
  switch (event.event) {
    case "position":
      return [["positions"], ["servers"], ["topology"]];
    case "health":
    case "read_only":
    case "fenced":
    case "maintenance":
      return [["servers"], ["topology"], ["positions"]];
    case "link":
      return [["topology"], ["positions"]];
    case "replica_guard":
      // A replica made read-only again (or flagged): its flag and the alerts.
      return [["servers"], ["topology"]];
    case "errant":
      return [["topology"]];
    case "operation": {
      const ended = event.state !== "running" && event.state !== "pending";
      const keys: (string | number)[][] = [["operations"], ["operation", event.operation_id]];
      // An operation that ended may have moved the master role.
      if (ended) keys.push(["servers"], ["topology"], ["positions"], [], ["drills"]);
      return keys;
    }
    case "drill":
      return [["drills"], ["operations"]];
    default:
      return [];
  }
}

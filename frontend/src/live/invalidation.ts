// Which cached queries a cluster event makes stale (a pure mapping, tested), so an event refreshes only the views
// it concerns.

/** Query-key suffixes after ["clusters", id] to refresh for an event type. */
export function staleQueries(eventType: string, data: Record<string, unknown>): (string | number)[][] {
  switch (eventType) {
    case "position":
      return [["positions"], ["servers"], ["topology"]];
    case "health":
    case "read_only":
    case "fenced":
    case "server_discovered":
      return [["servers"], ["topology"], ["positions"]];
    case "link":
      return [["topology"], ["positions"]];
    case "operation": {
      const id = typeof data.operation_id === "number" ? data.operation_id : null;
      const ended = data.state !== "running" && data.state !== "pending";
      const keys: (string | number)[][] = [["operations"]];
      if (id !== null) keys.push(["operation", id]);
      // An operation that ended may have moved the master role.
      if (ended) keys.push(["servers"], ["topology"], ["positions"], [], ["drills"]);
      return keys;
    }
    default:
      return eventType.startsWith("drill") ? [["drills"], ["operations"]] : [];
  }
}

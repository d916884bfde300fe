// How a server's page is addressed: /clusters/:clusterId/servers/:ref, where `ref` is the server_id the server
// reports (MariaDB's, the number in its GTIDs), as an operator knows it. A server whose server_id is not read yet,
// or that shares it with another registered server of the cluster, is addressed by the control plane's own id as
// `registered-N` (said as such). Pure functions: the path of a server, and the server a path's `ref` names.

export interface ServerIdentity {
  /** The control plane's id of the registered server. */
  id: number;
  /** The server_id the server reports (null until read). */
  reported_server_id: number | null;
}

const REGISTERED = /^registered-([1-9]\d{0,17})$/;
const SERVER_ID = /^(0|[1-9]\d{0,9})$/;

/** The `ref` naming `server` among `all` (the cluster's servers): its server_id when that names it alone. */
export function serverRef(server: ServerIdentity, all: readonly ServerIdentity[] = []): string {
  const reported = server.reported_server_id;
  if (reported == null) return `registered-${server.id}`;
  const shared = all.some((other) => other.id !== server.id && other.reported_server_id === reported);
  return shared ? `registered-${server.id}` : String(reported);
}

export function serverPath(clusterId: number, server: ServerIdentity, all: readonly ServerIdentity[] = []): string {
  return `/clusters/${clusterId}/servers/${serverRef(server, all)}`;
}

export type Resolved<S extends ServerIdentity> =
  | { kind: "found"; server: S }
  /** Several registered servers report that server_id: each is listed, by its own path. */
  | { kind: "ambiguous"; servers: S[] }
  | { kind: "missing"; words: string }
  | { kind: "invalid"; words: string };

/** Whether `ref` has a server page's form at all (a server_id, or registered-N). */
export function isServerRef(ref: string): boolean {
  return SERVER_ID.test(ref) || REGISTERED.test(ref);
}

/** The server `ref` names among `servers`. */
export function resolveServerRef<S extends ServerIdentity>(ref: string, servers: readonly S[]): Resolved<S> {
  const registered = REGISTERED.exec(ref);
  if (registered) {
    const id = Number(registered[1]);
    const server = servers.find((s) => s.id === id);
    return server
      ? { kind: "found", server }
      : { kind: "missing", words: `No registered server has the control plane's id ${id} in this cluster (removed?).` };
  }
  if (!SERVER_ID.test(ref)) {
    return { kind: "invalid", words: `"${ref}" names no server: a server's page is addressed by its server_id (or registered-N).` };
  }
  const serverId = Number(ref);
  const matching = servers.filter((s) => s.reported_server_id === serverId);
  if (matching.length === 1) return { kind: "found", server: matching[0]! };
  if (matching.length > 1) return { kind: "ambiguous", servers: matching };
  return { kind: "missing", words: `No server of this cluster reports server_id ${serverId} (removed, or not read yet?).` };
}

/** A topology node's identity (the topology names the control plane's id `registered_server_id`). */
export const nodeIdentity = (node: { registered_server_id: number; reported_server_id?: number | null }): ServerIdentity => ({
  id: node.registered_server_id,
  reported_server_id: node.reported_server_id ?? null,
});

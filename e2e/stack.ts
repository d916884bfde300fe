// The stack the specs drive (started by scripts/test-e2e.sh with scripts/stack.sh): its API URL, an admin API
// token, the cluster and the nodes, and the MariaDB clusters, read from the stack.json that $FERRY_E2E_STACK names.
import { readFileSync } from "node:fs";

export interface StackNode {
  name: string;
  /** host:port of the node's transaction protocol. */
  protocol: string;
  /** Base URL of the node's admin API. */
  admin: string;
}

/** A MariaDB cluster the stack started (scripts/mariadb_cluster.py) and registered. */
export interface StackMariadbCluster {
  name: string;
  /** The cluster's id in the control plane. */
  id: number;
  /** Its cluster.json: servers (number, port, address, socket), links, users. */
  cluster_json: string;
  /** The pid file of its demo report (scripts/mariadb_report_lock.py: SIGUSR1 pauses it, SIGUSR2 resumes it), when
   * it has one. */
  report_lock_pid_file: string | null;
}

export interface Stack {
  api: string;
  admin_token: string;
  cluster_id: number;
  cluster_name: string;
  node_token: string;
  /** The file holding the pid of the control plane's worker (the collector and the operations' runner). */
  worker_pid_file: string;
  nodes: StackNode[];
  /** With FERRY_MARIADB_SEED000=1 (the end-to-end suite): the two-master MariaDB cluster `seed000`. */
  mariadb_clusters?: StackMariadbCluster[];
}

export function readStack(): Stack {
  const path = process.env.FERRY_E2E_STACK;
  if (!path) {
    throw new Error("FERRY_E2E_STACK is not set: run the suite with `make test-e2e` (scripts/test-e2e.sh starts the stack)");
  }
  return JSON.parse(readFileSync(path, "utf8")) as Stack;
}

/** `body`'s result, run with the stack's process whose pid `pidFile` holds sent `hold` before it and `release` after
 * it, however it ends: the worker stopped and let go (SIGSTOP, SIGCONT), a demo report paused and resumed (SIGUSR1,
 * SIGUSR2). `what` names the process in the error when the file holds no pid. */
export async function whileSignalled<T>(
  pidFile: string,
  what: string,
  [hold, release]: [NodeJS.Signals, NodeJS.Signals],
  body: () => Promise<T>,
): Promise<T> {
  const pid = Number(readFileSync(pidFile, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 1) throw new Error(`no ${what} pid in ${pidFile}`);
  process.kill(pid, hold);
  try {
    return await body();
  } finally {
    process.kill(pid, release);
  }
}

/** Request options for a node's admin API: every route but /v1/health needs the node token. */
export function nodeAuth(stack: Stack): { headers: Record<string, string> } {
  return { headers: { Authorization: `Bearer ${stack.node_token}` } };
}

// The two-master MariaDB cluster `seed000` the stack started (scripts/mariadb_cluster.py): its servers as cluster.json describes
// them, and SQL run as root over a server's unix socket with Debian's `mariadb` client (to set up what a spec needs
// on the servers themselves, e.g. a row only one replica has).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import type { Stack } from "./stack";

export interface MariadbServer {
  number: number;
  port: number;
  /** host:port, which is also the server's name in the control plane (discovery names servers so). */
  address: string;
  socket: string;
}

export interface MariadbCluster {
  id: number;
  name: string;
  servers: MariadbServer[];
  /** The logins mariadb_cluster.py created: Ferry's (admin), the replicas' (replication), the load writer's. */
  users: Record<"admin" | "replication" | "workload", { user: string; password: string }>;
  server: (number: number) => MariadbServer;
  /** Runs `statements` as root on server `number`; returns the rows (tab-separated cells). Throws with the server's
   * error message when one fails. */
  sql: (number: number, statements: string) => string[][];
  /** The pid file of the cluster's demo report, which holds a table lock on a replica part of every period
   * (scripts/mariadb_report_lock.py), or null without one. */
  reportLockPidFile: string | null;
}

export function mariadbCluster(stack: Stack, name: string): MariadbCluster {
  const entry = stack.mariadb_clusters?.find((c) => c.name === name);
  if (!entry) throw new Error(`the stack has no MariaDB cluster ${name} (scripts/test-e2e.sh starts seed000)`);
  const state = JSON.parse(readFileSync(entry.cluster_json, "utf8")) as Pick<MariadbCluster, "servers" | "users">;
  const server = (number: number) => {
    const found = state.servers.find((s) => s.number === number);
    if (!found) throw new Error(`${name} has no server ${number}`);
    return found;
  };
  const sql = (number: number, statements: string) =>
    execFileSync("mariadb", ["--no-defaults", `--socket=${server(number).socket}`, "--user=root", "--batch", "--skip-column-names"], {
      input: statements,
      encoding: "utf8",
      timeout: 30_000,
      // The server's error goes into the thrown error's message rather than the run's output.
      stdio: ["pipe", "pipe", "pipe"],
    })
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => line.split("\t"));
  return { id: entry.id, name, servers: state.servers, users: state.users, server, sql, reportLockPidFile: entry.report_lock_pid_file };
}

// A replica's parallel apply on its server page: per replication connection, the mode and workers as the server
// reports them, and per GTID domain its apply rate against its master's commit rate with the verdict ("keeps up",
// "falls behind by N txn/s"), measured by the API from two readings a second apart and refreshed every few
// seconds; and the guarded change (the parallel_apply operation: previewed by a dry run, the cluster's name typed).
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap, type Schemas } from "../../api/client";
import { useParallelApply } from "../../api/mutations";
import { useCluster } from "../../api/queries";
import { GuardedAction } from "../operations/GuardedAction";

type Read = Schemas["ParallelApplyRead"];
type Connection = Schemas["ConnectionApplyRead"];
type Limits = Schemas["ParallelApplyLimitsRead"];
/** How often the rates are measured again while the page is open. */
const REFRESH_MS = 5000;

export function useParallelApplyRead(clusterId: number, serverId: number) {
  return useQuery({
    queryKey: ["clusters", clusterId, "servers", serverId, "parallel-apply"] as const,
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}/parallel-apply", {
          params: { path: { cluster_id: clusterId, registered_server_id: serverId }, query: { interval_s: 1 } },
        }),
      ),
    refetchInterval: REFRESH_MS,
  });
}

const rate = (value: number | null | undefined) => (value == null ? "?" : `${Math.round(value).toLocaleString()} txn/s`);

export function ParallelApply({ clusterId, serverId, serverName }: { clusterId: number; serverId: number; serverName: (id: number) => string }) {
  const read = useParallelApplyRead(clusterId, serverId);
  if (read.isPending) return <p>Measuring…</p>;
  if (read.error) return <p className="error">Parallel apply could not be read: {String((read.error as Error).message ?? read.error)}</p>;
  const data: Read = read.data;
  if (data.connections.length === 0) return <p>No replication connection: nothing applied here.</p>;
  return (
    <div className="parallel-apply">
      {data.connections.map((c) => (
        <ConnectionApply key={c.name} clusterId={clusterId} read={data} connection={c} serverName={serverName} />
      ))}
    </div>
  );
}

function ConnectionApply({ clusterId, read, connection, serverName }: { clusterId: number; read: Read; connection: Connection; serverName: (id: number) => string }) {
  const s = connection.settings;
  const tone = connection.verdict === "falls_behind" ? "error" : "";
  return (
    <section aria-label={`Parallel apply of ${connection.name || "the default connection"}`}>
      <p>
        Connection <span className="mono">{connection.name || "''"}</span>: <strong>{s.mode ?? "?"}</strong>, {s.workers ?? "?"} worker(s),{" "}
        {s.domain_workers_max ?? "?"} per domain — <span className={tone}>{connection.words}</span>
      </p>
      {connection.domains.length > 0 ? (
        <table aria-label="Apply rate per domain">
          <thead>
            <tr>
              <th>Domain</th>
              <th>Master commits</th>
              <th>Applied here</th>
              <th>Behind</th>
              <th>Verdict</th>
            </tr>
          </thead>
          <tbody>
            {connection.domains.map((d) => (
              <tr key={d.domain}>
                <td>{d.domain}</td>
                <td>{rate(d.master_commit_rate)}</td>
                <td>{rate(d.apply_rate)}</td>
                <td>{d.behind ?? "?"}</td>
                <td className={d.verdict === "falls_behind" ? "error" : ""}>{d.words}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {read.limits ? <ChangeParallelApply clusterId={clusterId} read={read} connection={connection} limits={read.limits} serverName={serverName} /> : null}
    </section>
  );
}

/** Why the form's values are refused, as the server's kind says (the API says the same, 422). */
export function refusal(limits: Limits, mode: string, workers: number, domainMax: number): string | null {
  if (!limits.modes.includes(mode)) return `mode ${mode} is not one of ${limits.modes.join(", ")}`;
  if (!Number.isInteger(workers) || workers < limits.workers_min || workers > limits.workers_max)
    return `workers must be ${limits.workers_min} to ${limits.workers_max}`;
  if (!Number.isInteger(domainMax) || domainMax < limits.domain_workers_min || domainMax > Math.max(workers, limits.domain_workers_min))
    return `per domain must be ${limits.domain_workers_min} to workers (${workers})`;
  return null;
}

function ChangeParallelApply({ clusterId, read, connection, limits, serverName }: { clusterId: number; read: Read; connection: Connection; limits: Limits; serverName: (id: number) => string }) {
  const [open, setOpen] = useState(false);
  const cluster = useCluster(clusterId);
  const mutation = useParallelApply(clusterId);
  const s = connection.settings;
  const [mode, setMode] = useState<string>(s.mode ?? limits.modes[0] ?? "");
  const [workers, setWorkers] = useState(s.workers ?? limits.workers_min);
  const [domainMax, setDomainMax] = useState(s.domain_workers_max ?? limits.domain_workers_min);
  if (!open)
    return (
      <button type="button" className="danger" onClick={() => setOpen(true)}>
        Change parallel apply…
      </button>
    );
  const why = refusal(limits, mode, workers, domainMax);
  const body = (dryRun: boolean): Schemas["ParallelApplyRequest"] | null =>
    why ? null : { dry_run: dryRun, registered_server_id: read.registered_server_id, connection: connection.name || null, mode, workers, domain_workers_max: domainMax };
  return (
    <GuardedAction<Schemas["ParallelApplyRequest"]>
      clusterId={clusterId}
      clusterName={cluster.data?.name ?? ""}
      title={`Change the parallel apply of ${read.label}`}
      verb="Change parallel apply"
      typedConfirmation
      paramsKey={`${read.registered_server_id}/${connection.name}/${mode}/${workers}/${domainMax}`}
      previewBody={() => body(true)}
      runBody={() => body(false)!}
      start={(v) => mutation.mutateAsync(v)}
      serverName={serverName}
    >
      <p role="note" className="warning">
        ⚠ The connection's applying side stops at a transaction boundary and starts again at its position: nothing is skipped or applied twice.
        {limits.server_wide_workers
          ? " The workers are one pool for the whole server: every connection of this server stops and starts again for the moment of the change."
          : " Its receiving side goes on."}
      </p>
      <label>
        Mode{" "}
        <select value={mode} onChange={(e) => setMode(e.target.value)}>
          {limits.modes.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
      </label>{" "}
      <label>
        Workers{" "}
        <input type="number" min={limits.workers_min} max={limits.workers_max} value={Number.isNaN(workers) ? "" : workers}
          onChange={(e) => setWorkers(e.target.valueAsNumber)} aria-invalid={why !== null} />
      </label>{" "}
      <label>
        At most per domain{" "}
        <input type="number" min={limits.domain_workers_min} max={workers} value={Number.isNaN(domainMax) ? "" : domainMax}
          onChange={(e) => setDomainMax(e.target.valueAsNumber)} aria-invalid={why !== null} />
      </label>
      {why ? <p className="error">{why}</p> : null}
    </GuardedAction>
  );
}

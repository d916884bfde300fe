// "Check consistency with its source…" on a replica's page: the consistency check — the replica compared with the
// source it replicates from, table by table and chunk by chunk of primary key, at the same GTID position (nothing
// written, nothing locked; the replica paused briefly per batch of chunks). A dry run first (which source, how many
// tables), then the run followed live; its outcome lists per table the chunks compared, the rows on each side, and
// every chunk that differs with its key range. A rejoin's or rebuild's own check (started by Ferry) shows the same.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useConsistencyCheck } from "../../api/mutations";
import { useCluster } from "../../api/queries";
import { RequireRole } from "../../auth/RequireRole";
import { GuardedAction } from "../operations/GuardedAction";
import type { Operation } from "../operations/operationFacts";

interface Props {
  clusterId: number;
  serverId: number;
  label: string;
  serverName: (id: number) => string;
}

/** Shown to operators and admins only. */
export function ConsistencyCheck(props: Props) {
  return (
    <RequireRole role="operator">
      <CheckButton {...props} />
    </RequireRole>
  );
}

function CheckButton(props: Props) {
  const [open, setOpen] = useState(false);
  if (open) return <CheckForm {...props} />;
  return (
    <button type="button" onClick={() => setOpen(true)}>
      Check consistency with its source…
    </button>
  );
}

/** The chunk size field as rows: 10 to 1,000,000, whole. */
export function parseChunkRows(text: string): number | "invalid" {
  const value = Number(text.trim());
  return Number.isInteger(value) && value >= 10 && value <= 1_000_000 ? value : "invalid";
}

function CheckForm({ clusterId, serverId, label, serverName }: Props) {
  const cluster = useCluster(clusterId);
  const mutation = useConsistencyCheck(clusterId);
  const [chunkRows, setChunkRows] = useState("10000");
  const rows = parseChunkRows(chunkRows);
  const body = (dryRun: boolean): Schemas["ConsistencyCheckRequest"] | null =>
    rows === "invalid" ? null : { dry_run: dryRun, registered_server_id: serverId, chunk_rows: rows, chunks_per_stop: 10, pause_ms: 0 };
  return (
    <GuardedAction<Schemas["ConsistencyCheckRequest"]>
      clusterId={clusterId}
      clusterName={cluster.data?.name ?? ""}
      title={`Check ${label} against its source`}
      verb="Check"
      typedConfirmation={false}
      paramsKey={`${serverId}-${chunkRows}`}
      previewBody={() => body(true)}
      runBody={() => body(false) as Schemas["ConsistencyCheckRequest"]}
      start={(v) => mutation.mutateAsync(v)}
      serverName={serverName}
      outcome={(op) => <ConsistencyOutcome operation={op} serverName={serverName} />}
    >
      <p role="note">
        Compares every table of {label} with its source's, chunk by chunk of primary key, at the same GTID position:
        nothing is written or locked; {label}'s replication pauses briefly for each batch of chunks.
      </p>
      <label>
        Rows per chunk{" "}
        <input aria-label="Rows per chunk" inputMode="numeric" value={chunkRows} onChange={(e) => setChunkRows(e.target.value)} />
      </label>
      {rows === "invalid" ? <p className="error">Rows per chunk is a whole number from 10 to 1,000,000.</p> : null}
    </GuardedAction>
  );
}

function keyText(bound: Schemas["DriftedChunk"]["lower"]): string {
  return bound == null ? "" : bound.length === 1 ? String(bound[0]) : `(${bound.join(", ")})`;
}

/** A chunk's key range in words: `id from 301 to before 401`, `id below 101`, `id from 901 on`. */
export function chunkRange(key: string[], chunk: Schemas["DriftedChunk"]): string {
  const name = key.length === 1 ? key[0] : `(${key.join(", ")})`;
  if (chunk.lower == null && chunk.upper == null) return "the whole table";
  if (chunk.lower == null) return `${name} below ${keyText(chunk.upper)}`;
  if (chunk.upper == null) return `${name} from ${keyText(chunk.lower)} on`;
  return `${name} from ${keyText(chunk.lower)} to before ${keyText(chunk.upper)}`;
}

export function ConsistencyOutcome({ operation, serverName }: { operation: Operation; serverName: (id: number) => string }) {
  if (operation.type !== "consistency_check" || operation.result == null) return null;
  const result = operation.result;
  const source = result.source_registered_server_id != null ? serverName(result.source_registered_server_id) : "its source";
  if (operation.dry_run) {
    return operation.state === "succeeded" ? <p>It can be compared with {source}.</p> : null;
  }
  const tables = result.tables ?? [];
  if (tables.length === 0) return null;
  return (
    <div aria-label="Consistency">
      <p role={result.consistent === false ? "alert" : "status"}>
        {result.consistent === false
          ? `✕ It differs from ${source}: ${result.chunks_drifted ?? 0} of ${result.chunks_checked ?? 0} chunks.`
          : `✓ Equal to ${source} in all ${result.chunks_checked ?? 0} chunks of ${tables.length} tables.`}
      </p>
      <table>
        <caption>Per table</caption>
        <thead>
          <tr><th>Table</th><th>Chunks</th><th>Rows (source)</th><th>Rows (replica)</th><th>Differs</th></tr>
        </thead>
        <tbody>
          {tables.map((t) => (
            <tr key={t.table} data-drifted={t.drifted?.length || t.missing_on ? "yes" : "no"}>
              <td className="mono">{t.table}</td>
              <td>{t.chunks ?? 0}</td>
              <td>{t.source_rows ?? 0}</td>
              <td>{t.replica_rows ?? 0}</td>
              <td>
                {t.missing_on ? `missing on the ${t.missing_on}` : null}
                {(t.drifted ?? []).map((c) => (
                  <div key={c.index} className="mono">
                    {`chunk ${c.index}: ${chunkRange(t.key ?? [], c)} · ${c.source_rows} rows on the source, ${c.replica_rows} here`}
                  </div>
                ))}
                {!t.missing_on && (t.drifted ?? []).length === 0 ? "no" : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

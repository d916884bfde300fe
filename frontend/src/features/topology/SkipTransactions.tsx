// "Skip N transaction(s) and restart" on a replica connection stopped by an SQL error (e.g. MariaDB's 1062
// duplicate key): the operator action that passes over the failing transaction and starts the connection again.
// It loses data on that replica, so it says so before anything runs, previews which GTIDs would be skipped (a dry
// run), needs the cluster's name typed, and shows what was skipped and whether the replica replicates again.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useSkipTransactions } from "../../api/mutations";
import { useCluster } from "../../api/queries";
import { GuardedAction } from "../operations/GuardedAction";
import type { Operation } from "../operations/operationFacts";

type Edge = Schemas["TopologyEdge"];
const COUNT_MAX = 100;

export function skippable(edge: Edge): boolean {
  return !edge.running && edge.sql_state === "error";
}

interface Props {
  clusterId: number;
  edge: Edge;
  replicaName: string;
  serverName: (id: number) => string;
}

/** The button on a connection stopped by an SQL error; once pressed, the form stays (with its outcome) after the
 * connection runs again. */
export function SkipTransactions(props: Props) {
  const [open, setOpen] = useState(false);
  if (open) return <SkipForm {...props} />;
  return skippable(props.edge) ? (
    <button type="button" className="danger" onClick={() => setOpen(true)}>
      Skip and restart…
    </button>
  ) : null;
}

function SkipForm({ clusterId, edge, replicaName, serverName }: Props) {
  const cluster = useCluster(clusterId);
  const mutation = useSkipTransactions(clusterId);
  const [count, setCount] = useState(1);
  const valid = Number.isInteger(count) && count >= 1 && count <= COUNT_MAX;
  const plural = count === 1 ? "" : "s";
  const body = (dryRun: boolean): Schemas["SkipTransactionsRequest"] | null =>
    valid ? { dry_run: dryRun, registered_server_id: edge.replica_registered_server_id, connection: edge.connection || null, count } : null;
  return (
    <GuardedAction<Schemas["SkipTransactionsRequest"]>
      clusterId={clusterId}
      clusterName={cluster.data?.name ?? ""}
      title={`Skip the failing transaction on ${replicaName}`}
      verb={`Skip ${count} transaction${plural} and restart`}
      typedConfirmation
      paramsKey={`${edge.replica_registered_server_id}/${edge.connection}/${count}`}
      previewBody={() => body(true)}
      runBody={() => body(false)!}
      start={(v) => mutation.mutateAsync(v)}
      serverName={serverName}
      outcome={(op) => <SkipOutcome operation={op} />}
    >
      <p role="note" className="warning">
        ⚠ The skipped transaction{plural} will be lost on {replicaName}: not applied there, and never replicated
        again. Its data then differs from its master's until repaired by hand. Skip only a transaction whose change
        {replicaName} already has (or must not have); otherwise repair the data or rebuild the replica instead.
      </p>
      <label>
        Transactions to skip{" "}
        <input
          type="number"
          min={1}
          max={COUNT_MAX}
          value={Number.isNaN(count) ? "" : count}
          onChange={(e) => setCount(e.target.valueAsNumber)}
          aria-invalid={!valid}
        />
      </label>
      {valid ? null : <p className="error">Between 1 and {COUNT_MAX}.</p>}
    </GuardedAction>
  );
}

function SkipOutcome({ operation }: { operation: Operation }) {
  const result = operation.type === "skip_transactions" ? (operation.result ?? {}) : {};
  const gtids = result.skipped_gtids ?? [];
  const named = gtids.length > 0 ? gtids.join(", ") : "not named by the servers";
  if (operation.dry_run) {
    return operation.state === "succeeded" ? (
      <p>
        Would skip: <strong className="mono">{named}</strong>
      </p>
    ) : null;
  }
  return (
    <div className="skip-outcome" aria-label="Skip outcome">
      <p>
        Skipped: <strong className="mono">{named}</strong>
        {result.skipped_gtids_source ? ` (from ${result.skipped_gtids_source})` : ""}
      </p>
      {result.data_loss ? <p role="alert">{result.data_loss}</p> : null}
      {result.replicating != null ? (
        <p>{result.replicating ? "✓ It replicates again." : "✕ It does not replicate again."}</p>
      ) : null}
      {operation.error ? <p className="error">{operation.error}</p> : null}
    </div>
  );
}

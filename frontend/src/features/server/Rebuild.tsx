// "Rebuild from a donor…" on a replica's (or a fenced former master's) page: the rebuild operation — its data
// replaced by a consistent copy of a donor's, then replication from the copy's position. The donor is chosen by Ferry
// (a healthy replica with every domain, the least lag) unless the operator names one; the master only when forced.
// A dry run first, the cluster's name typed (the server's data is replaced), then followed live with its progress bar;
// a running rebuild can be cancelled, which leaves the server stopped and marked, never half-joined.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useCancelOperation, useRebuild } from "../../api/mutations";
import { useCluster, useTopology } from "../../api/queries";
import { RequireRole } from "../../auth/RequireRole";
import { ErrorMessage } from "../../components/QueryState";
import { CopyProgressBar } from "../operations/CopyProgress";
import { GuardedAction } from "../operations/GuardedAction";
import { hasEnded, type Operation } from "../operations/operationFacts";
import { FollowingCheck } from "./FollowingCheck";

interface Props {
  clusterId: number;
  serverId: number;
  label: string;
  serverName: (id: number) => string;
}

/** Shown to operators and admins only. */
export function Rebuild(props: Props) {
  return (
    <RequireRole role="operator">
      <RebuildButton {...props} />
    </RequireRole>
  );
}

function RebuildButton(props: Props) {
  const [open, setOpen] = useState(false);
  if (open) return <RebuildForm {...props} />;
  return (
    <button type="button" className="danger" onClick={() => setOpen(true)}>
      Rebuild from a donor…
    </button>
  );
}

/** The throttle field's text as MB/s: "" is no limit; anything else must be a positive number. */
export function parseThrottle(text: string): number | null | "invalid" {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  const value = Number(trimmed);
  return Number.isFinite(value) && value > 0 ? value : "invalid";
}

function RebuildForm({ clusterId, serverId, label, serverName }: Props) {
  const cluster = useCluster(clusterId);
  const topology = useTopology(clusterId);
  const mutation = useRebuild(clusterId);
  const [donor, setDonor] = useState<number | null>(null);
  const [force, setForce] = useState(false);
  const [throttle, setThrottle] = useState("");
  const nodes = (topology.data?.nodes ?? []).filter((n) => n.registered_server_id !== serverId);
  const donorNode = nodes.find((n) => n.registered_server_id === donor);
  const donorIsMaster = donorNode?.role === "master";
  const mbS = parseThrottle(throttle);
  const body = (dryRun: boolean): Schemas["RebuildRequest"] | null =>
    mbS === "invalid"
      ? null
      : {
          dry_run: dryRun,
          registered_server_id: serverId,
          donor_registered_server_id: donor,
          force_master_donor: donorIsMaster && force,
          throttle_mb_s: mbS,
          resume: false,
        };
  return (
    <GuardedAction<Schemas["RebuildRequest"]>
      clusterId={clusterId}
      clusterName={cluster.data?.name ?? ""}
      title={`Rebuild ${label} from a donor`}
      verb="Rebuild"
      typedConfirmation
      paramsKey={`${serverId}-${donor ?? "auto"}-${force}-${throttle}`}
      previewBody={() => body(true)}
      runBody={() => body(false) as Schemas["RebuildRequest"]}
      start={(v) => mutation.mutateAsync(v)}
      serverName={serverName}
      live={(op) => <RebuildLive clusterId={clusterId} operation={op} />}
      outcome={(op) => <RebuildOutcome operation={op} label={label} serverName={serverName} />}
    >
      <p role="note">
        {label}'s data is replaced by a consistent copy of the donor's, streamed and checksummed; then it replicates from
        the copy's position. It is marked (fenced) until it replicates; cancelled or failed, it stays stopped and marked.
      </p>
      <label>
        Donor{" "}
        <select
          aria-label="Donor"
          value={donor ?? ""}
          onChange={(e) => {
            setDonor(e.target.value === "" ? null : Number(e.target.value));
            setForce(false);
          }}
        >
          <option value="">Chosen by Ferry (a healthy replica with every domain, least lag)</option>
          {nodes.map((n) => (
            <option key={n.registered_server_id} value={n.registered_server_id}>
              {`${n.label} — ${n.role}`}
            </option>
          ))}
        </select>
      </label>
      {donorIsMaster ? (
        <p role="note">
          <label>
            <input type="checkbox" checked={force} onChange={(e) => setForce(e.target.checked)} /> Copy from the master
            anyway (the copy reads its disks while it takes the writes)
          </label>
        </p>
      ) : null}
      <label>
        Throttle (MB/s, empty: no limit){" "}
        <input aria-label="Throttle (MB/s)" inputMode="decimal" value={throttle} onChange={(e) => setThrottle(e.target.value)} />
      </label>
      {mbS === "invalid" ? <p className="error">The throttle is a number of MB/s above 0, or empty for no limit.</p> : null}
    </GuardedAction>
  );
}

function progressOf(operation: Operation): Schemas["RebuildProgress"] | null {
  return operation.type === "rebuild" ? (operation.result?.progress ?? null) : null;
}

/** While the rebuild runs: its progress bar and a cancel button. */
function RebuildLive({ clusterId, operation }: { clusterId: number; operation: Operation }) {
  const cancel = useCancelOperation(clusterId);
  const progress = progressOf(operation);
  return (
    <div aria-label="Rebuild under way">
      {progress ? <CopyProgressBar progress={progress} /> : <p role="status">Preparing the copy…</p>}
      {!hasEnded(operation) && !operation.dry_run ? (
        <button type="button" className="danger" disabled={cancel.isPending} onClick={() => cancel.mutate(operation.id)}>
          Cancel the rebuild (the server stays stopped and marked)
        </button>
      ) : null}
      {cancel.error ? <ErrorMessage error={cancel.error} /> : null}
    </div>
  );
}

function RebuildOutcome({ operation, label, serverName }: { operation: Operation; label: string; serverName: (id: number) => string }) {
  if (operation.type !== "rebuild") return null;
  const result = operation.result ?? {};
  const donor = result.donor_registered_server_id != null ? serverName(result.donor_registered_server_id) : null;
  const source = result.source_registered_server_id != null ? serverName(result.source_registered_server_id) : null;
  const progress = progressOf(operation);
  if (operation.dry_run) {
    return operation.state === "succeeded" ? <p>{label} can be rebuilt{donor ? ` from ${donor}` : ""}.</p> : null;
  }
  return (
    <div aria-label="Rebuild outcome">
      {progress ? <CopyProgressBar progress={progress} /> : null}
      {operation.state === "succeeded" ? (
        <p>
          ✓ Rebuilt from {donor ?? "its donor"} at <span className="mono">{result.position || "an empty position"}</span>; it
          replicates from {source ?? "its source"}, read-only, no longer marked.
        </p>
      ) : null}
      {operation.state === "succeeded" ? <FollowingCheck result={result} /> : null}
    </div>
  );
}

// "Rejoin as a replica…" on a fenced former master's page: the rejoin operation (a dry run first, the cluster's name
// typed, then followed live). The preview says whether it can rejoin; when it has transactions the master never had,
// they are listed per domain (how many, first and last GTID, the newest with time and tables) and nothing runs —
// unless the operator chooses to rewind them (cut, archived first): previewed again, the GTIDs that would be cut are
// listed, and the run says what was cut and the archive's id.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useRejoin } from "../../api/mutations";
import { useCluster } from "../../api/queries";
import { RequireRole } from "../../auth/RequireRole";
import { CopyProgressBar } from "../operations/CopyProgress";
import { GuardedAction } from "../operations/GuardedAction";
import { FollowingCheck } from "./FollowingCheck";
import type { Operation } from "../operations/operationFacts";

interface Props {
  clusterId: number;
  serverId: number;
  label: string;
  serverName: (id: number) => string;
  /** Told when the operator opens the dialog (the page keeps it while the rejoin makes the server a replica). */
  onOpen?: () => void;
}

/** Shown to operators and admins only; viewers see the fence and no control. */
export function Rejoin(props: Props) {
  return (
    <RequireRole role="operator">
      <RejoinButton {...props} />
    </RequireRole>
  );
}

function RejoinButton(props: Props) {
  const [open, setOpen] = useState(false);
  if (open) return <RejoinForm {...props} />;
  return (
    <button
      type="button"
      className="danger"
      onClick={() => {
        setOpen(true);
        props.onOpen?.();
      }}
    >
      Rejoin as a replica…
    </button>
  );
}

function RejoinForm({ clusterId, serverId, label, serverName }: Props) {
  const cluster = useCluster(clusterId);
  const mutation = useRejoin(clusterId);
  const [resolve, setResolve] = useState<"rewind" | "rebuild" | null>(null);
  const body = (dryRun: boolean): Schemas["RejoinRequest"] =>
    resolve ? { dry_run: dryRun, registered_server_id: serverId, resolve } : { dry_run: dryRun, registered_server_id: serverId };
  return (
    <GuardedAction<Schemas["RejoinRequest"]>
      clusterId={clusterId}
      clusterName={cluster.data?.name ?? ""}
      title={`Rejoin ${label} as a replica of the master`}
      verb="Rejoin"
      typedConfirmation
      paramsKey={`${serverId}-${resolve ?? "plain"}`}
      previewBody={() => body(true)}
      runBody={() => body(false)}
      start={(v) => mutation.mutateAsync(v)}
      serverName={serverName}
      outcome={(op) => (
        <RejoinOutcome operation={op} serverName={serverName} onRewind={() => setResolve("rewind")} onRebuild={() => setResolve("rebuild")} />
      )}
      live={(op) => {
        const progress = op.type === "rejoin" ? op.result?.rebuild?.progress : null;
        return progress ? <CopyProgressBar progress={progress} /> : null;
      }}
    >
      <p role="note">
        Ferry compares {label}'s transactions with the master's in every domain. With nothing only {label} has, it
        replicates from the master again, stays read-only and is no longer fenced. Transactions only it has are never
        dropped: they are listed, and nothing is changed.
      </p>
      {resolve === "rewind" ? (
        <p role="note">
          <label>
            <input type="checkbox" checked onChange={() => setResolve(null)} /> Rewind: cut what only {label} has,
            archived first (the archive is kept by Ferry; operators and admins download it).
          </label>
        </p>
      ) : null}
      {resolve === "rebuild" ? (
        <p role="note">
          <label>
            <input type="checkbox" checked onChange={() => setResolve(null)} /> Rebuild: archive what only {label} has
            (kept by Ferry), then replace its data with a copy of a donor's.
          </label>
        </p>
      ) : null}
    </GuardedAction>
  );
}

function when(us: number | null | undefined): string {
  return us == null ? "time not known" : new Date(us / 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

interface OutcomeProps {
  operation: Operation;
  serverName: (id: number) => string;
  /** Offered when the preview lists transactions only it has: preview again with a rewind. */
  onRewind?: () => void;
  /** Likewise, with a rebuild from a donor. */
  onRebuild?: () => void;
}

export function RejoinOutcome({ operation, serverName, onRewind, onRebuild }: OutcomeProps) {
  const result = operation.type === "rejoin" ? (operation.result ?? {}) : {};
  const onlyHere = result.only_here ?? [];
  const source = result.master_registered_server_id != null ? serverName(result.master_registered_server_id) : "the master";
  if (result.rewind) return <RewindOutcome operation={operation} rewind={result.rewind} source={source} />;
  if (result.rebuild) return <RebuildInRejoin operation={operation} source={source} serverName={serverName} />;
  if (onlyHere.length > 0) {
    return (
      <div aria-label="Transactions only this server has">
        <p role="alert">
          It has transactions {source} never had: acknowledged before it was replaced, never replicated. Nothing was
          changed; keep what you need from its binlog, then rebuild it or remove them before rejoining it.
        </p>
        <table>
          <caption>Transactions only it has, per domain</caption>
          <thead>
            <tr><th>Domain</th><th>How many</th><th>First</th><th>Last</th><th>Newest (time, tables)</th></tr>
          </thead>
          <tbody>
            {onlyHere.map((d) => (
              <tr key={d.domain}>
                <td>{d.domain}</td>
                <td>{d.count ?? "more than its binlog lists"}</td>
                <td className="mono">{d.first ?? "—"}</td>
                <td className="mono">{d.last}</td>
                <td>
                  {(d.transactions ?? []).slice(0, 5).map((t) => (
                    <div key={t.gtid} className="mono">{`${t.gtid} · ${when(t.commit_ts_us)} · ${(t.tables ?? []).join(", ") || "no table named"}`}</div>
                  ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {onRewind && operation.dry_run ? (
          <button type="button" onClick={onRewind}>
            Rewind (cut what only it has, archived first)
          </button>
        ) : null}
        {onRebuild && operation.dry_run ? (
          <button type="button" onClick={onRebuild}>
            Rebuild from a donor (what only it has archived first)
          </button>
        ) : null}
      </div>
    );
  }
  if (operation.state !== "succeeded") return operation.error ? <p className="error">{operation.error}</p> : null;
  return operation.dry_run ? (
    <p>It has nothing {source} lacks: it can rejoin as its replica.</p>
  ) : (
    <>
      <p>✓ It replicates from {source} again, read-only, no longer fenced.</p>
      <FollowingCheck result={result} />
    </>
  );
}

/** A rejoin that rebuilt: the archive of what only it had, the donor, and the copy as it ended. */
function RebuildInRejoin({ operation, source, serverName }: { operation: Operation; source: string; serverName: (id: number) => string }) {
  const result = operation.type === "rejoin" ? operation.result : null;
  const rebuild = result?.rebuild;
  if (!result || !rebuild) return null;
  const donor = rebuild.donor_registered_server_id != null ? serverName(rebuild.donor_registered_server_id) : "a donor";
  const done = operation.state === "succeeded";
  return (
    <div aria-label="Rebuild">
      {rebuild.progress ? <CopyProgressBar progress={rebuild.progress} /> : null}
      {result.rebuild_archive_id != null ? (
        <p>
          What only it had is archive {result.rebuild_archive_id}: download it from{" "}
          <span className="mono">{`GET /api/v1/clusters/${operation.cluster_id}/archives/${result.rebuild_archive_id}`}</span>.
        </p>
      ) : null}
      {done && operation.dry_run ? <p>It can be rebuilt from {donor}, then replicate from {source}.</p> : null}
      {done && !operation.dry_run ? (
        <>
          <p>✓ Rebuilt from {donor}; it replicates from {source} again, read-only, no longer fenced.</p>
          <FollowingCheck result={result} />
        </>
      ) : null}
      {!done && operation.error ? <p className="error">{operation.error}</p> : null}
    </div>
  );
}

function RewindOutcome(props: { operation: Operation; rewind: Schemas["RejoinRewind"]; source: string }) {
  const { operation, rewind, source } = props;
  const cut = rewind.cut ?? [];
  const done = operation.state === "succeeded";
  return (
    <div aria-label="Rewind">
      <table>
        <caption>
          {operation.dry_run ? "Would cut" : "Cut"}, per domain (rewound to <span className="mono">{rewind.to || "nothing kept"}</span>)
        </caption>
        <thead>
          <tr><th>Domain</th><th>How many</th><th>GTIDs</th></tr>
        </thead>
        <tbody>
          {cut.map((d) => (
            <tr key={d.domain}>
              <td>{d.domain}</td>
              <td>{d.gtids.length}</td>
              <td className="mono">{d.gtids.length > 1 ? `${d.gtids[0]} … ${d.gtids[d.gtids.length - 1]}` : d.gtids[0]}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {rewind.archive_id != null ? (
        <p>
          Archived first as archive {rewind.archive_id} (<span className="mono">{rewind.archive_name}</span>): download it
          from <span className="mono">{`GET /api/v1/clusters/${operation.cluster_id}/archives/${rewind.archive_id}`}</span>.
        </p>
      ) : null}
      {!done && operation.error ? <p className="error">{operation.error}</p> : null}
      {done && operation.dry_run ? <p>Once rewound, it can rejoin as a replica of {source}.</p> : null}
      {done && !operation.dry_run ? <p>✓ Rewound; it replicates from {source} again, read-only, no longer fenced.</p> : null}
      {done && !operation.dry_run && operation.type === "rejoin" && operation.result ? <FollowingCheck result={operation.result} /> : null}
    </div>
  );
}

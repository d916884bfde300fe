// The audit rows as a table, each typed: a run or a dry run of an operation (its type and number linked to the
// cluster's operations, with its old → new master), another accepted change (a token, a cluster, a server), or a
// refusal; who, when (in the chosen time zone), the request and its outcome. Shared by the global audit page and a
// cluster's Audit log tab.
import { Link } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { Badge, type Tone } from "../../components/StatusBadge";
import { formatTime, humanize } from "../../lib/format";

type Entry = Schemas["AuditEntryRead"];

const KIND: Record<Entry["kind"] & string, { text: string; tone: Tone; symbol: string }> = {
  run: { text: "run", tone: "info", symbol: "▶" },
  dry_run: { text: "dry run", tone: "muted", symbol: "◇" },
  change: { text: "change", tone: "ok", symbol: "✎" },
  refused: { text: "refused", tone: "warn", symbol: "✕" },
};

/** Where an operation is read: its cluster's operations tab, at its row. */
export function operationHref(clusterId: number, operationId: number): string {
  return `/clusters/${clusterId}/operations#operation-${operationId}`;
}

function OperationCell({ entry }: { entry: Entry }) {
  const op = entry.operation;
  if (!op || entry.cluster_id == null) return <span className="muted">—</span>;
  const moves = op.old_master || op.new_master ? ` ${op.old_master ?? "?"} → ${op.new_master ?? "?"}` : "";
  return (
    <span data-operation={op.id}>
      <Link to={operationHref(entry.cluster_id, op.id)}>{`${humanize(op.type)} #${op.id}`}</Link>
      {op.dry_run ? <span className="small muted"> (dry run)</span> : null}
      <span className="small">{moves}</span>
      <div className="small muted">now {op.state}</div>
    </span>
  );
}

export function AuditTable({ entries, clusterNames }: { entries: Entry[]; clusterNames?: ReadonlyMap<number, string> }) {
  return (
    <div className="scroll-x">
      <table className="data" aria-label="Audit log">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">Kind</th>
            <th scope="col">Action</th>
            {clusterNames ? <th scope="col">Cluster</th> : null}
            <th scope="col">Operation</th>
            <th scope="col">Request</th>
            <th scope="col">Outcome</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => {
            const kind = KIND[entry.kind ?? "change"];
            const server = (entry.details as { server?: unknown }).server;
            return (
              <tr key={entry.id} data-kind={entry.kind}>
                <td>{formatTime(entry.at)}</td>
                <td>{entry.actor ?? "anonymous"}</td>
                <td>
                  <Badge tone={kind.tone} symbol={kind.symbol}>
                    {kind.text}
                  </Badge>
                </td>
                <td>
                  {humanize(entry.action)}
                  {typeof server === "string" ? <div className="small muted">{server}</div> : null}
                </td>
                {clusterNames ? (
                  <td>
                    {entry.cluster_id == null ? (
                      <span className="muted">—</span>
                    ) : (
                      clusterNames.get(entry.cluster_id) ?? `cluster ${entry.cluster_id}`
                    )}
                  </td>
                ) : null}
                <td>
                  <OperationCell entry={entry} />
                </td>
                <td className="mono small">
                  {entry.method} {entry.path}
                </td>
                <td>
                  <Badge
                    tone={entry.outcome === "succeeded" ? "ok" : entry.outcome === "denied" ? "warn" : "bad"}
                    symbol={entry.outcome === "succeeded" ? "✓" : "✕"}
                  >
                    {`${entry.outcome} (${entry.status_code})`}
                  </Badge>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

// The Positions tab: servers × domains, each cell the server's GTID in that domain with how far it is behind the
// most advanced server (the cell's colour by transactions behind, the most advanced starred) and its lag in the API's
// words (judged against the connection's configured delay on the server); a column says which servers could be master
// now (ahead of all; a master of several, of its own domains). Each row is one poll of its server, read at the time
// it names, and its verdicts were computed by the API from those same positions: nothing live is laid over it.
import type { Schemas } from "../../api/client";
import { usePositions } from "../../api/queries";
import { QueryState } from "../../components/QueryState";
import { Badge, HealthBadge } from "../../components/StatusBadge";
import { formatLagTransactions, formatTime } from "../../lib/format";
import { BEHIND_LEVELS, behindLevel } from "./behindScale";

// A replica with nothing applied yet in a domain its connection carries ("none": a delayed replica's first half
// minute) is behind by every transaction there, and its lag is its lag: the cell says both, as for any position. A
// server that replicates nothing of a domain (a master of its own domain only, in a multi-source shape) is not
// behind in it: a plain "none".
function Cell({ cell }: { cell: Schemas["PositionCell"] | undefined }) {
  if (!cell || (cell.gtid == null && !cell.lag)) return <td className="muted">none</td>;
  const behind = cell.behind_transactions;
  const level = behindLevel(behind);
  return (
    <td className={`${behind > 0 ? "cell-behind" : "cell-level"} behind-${level}`} data-behind={behind}>
      <div className={cell.gtid == null ? "muted" : "mono"}>{cell.gtid ?? "none"}</div>
      <div className="small">
        {behind > 0 ? (
          <Badge tone="warn" symbol="▼">{`behind ${formatLagTransactions(behind)}`}</Badge>
        ) : (
          <Badge tone="ok" symbol="★">most advanced</Badge>
        )}
        {cell.lag ? <span data-lag> · lag {cell.lag.words}</span> : null}
      </div>
    </td>
  );
}

export function PositionsView({ clusterId }: { clusterId: number }) {
  const positions = usePositions(clusterId);
  const data = positions.data;
  const couldBe = new Set(data?.could_be_master ?? []);
  return (
    <QueryState isPending={positions.isPending} error={positions.error} what="positions">
      {data ? (
        <>
          <p>
            Most advanced (per-domain maximum of every server): <span className="mono">{data.most_advanced || "—"}</span>
          </p>
          <p className="small behind-legend" aria-label="Cell colours">
            <span className="legend-cell behind-ahead">★ most advanced in the domain</span>
            {BEHIND_LEVELS.map(({ level, label }) => (
              <span key={level} className={`legend-cell behind-${level}`}>
                {label}
              </span>
            ))}
            <span className="muted"> transactions behind</span>
          </p>
          <div className="scroll-x">
            <table className="data positions" aria-label="Positions: servers by domains">
              <thead>
                <tr>
                  <th scope="col">Server</th>
                  <th scope="col">Health</th>
                  {data.domains.map((domain) => (
                    <th scope="col" key={domain}>
                      Domain {domain}
                    </th>
                  ))}
                  <th scope="col">Could be master now</th>
                </tr>
              </thead>
              <tbody>
                {data.rows.map((row) => (
                  <tr key={row.registered_server_id}>
                    <th scope="row">
                      {row.name}
                      <div className="small muted" data-read-at>
                        {row.last_seen_at ? `read ${formatTime(row.last_seen_at)}` : "not read yet"}
                      </div>
                    </th>
                    <td>
                      <HealthBadge health={row.health} />
                    </td>
                    {data.domains.map((domain) => (
                      <Cell key={domain} cell={row.cells[String(domain)]} />
                    ))}
                    <td>
                      {couldBe.has(row.registered_server_id) && !row.ahead_of_all && (row.root_of ?? []).length > 0 ? (
                        <Badge tone="ok" symbol="✓">
                          {`yes, of domain${(row.root_of ?? []).length > 1 ? "s" : ""} ${(row.root_of ?? []).join(", ")} (its own)`}
                        </Badge>
                      ) : couldBe.has(row.registered_server_id) ? (
                        <Badge tone="ok" symbol="✓">yes</Badge>
                      ) : row.ahead_of_all || row.ahead_in_own_domains ? (
                        <Badge tone="warn" symbol="!">ahead of all, but not healthy or in maintenance</Badge>
                      ) : (
                        <span>no (behind in some domain)</span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {data.domains.length === 0 ? <p className="muted">No server has a position yet.</p> : null}
        </>
      ) : null}
    </QueryState>
  );
}

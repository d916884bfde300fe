// The servers behind the collector's failed polls, over the cycles its health plot shows: each server (a link to its
// page, where its current error is), its cluster, how many polls failed, the last one's time and error.
import { Link } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { formatTime } from "../../lib/format";
import { serverPath } from "../server/serverRef";

type FailedPolls = Schemas["CollectorFailedPolls"];
type Row = Schemas["FailedPollServer"];

function ServerCell({ row }: { row: Row }) {
  if (row.cluster == null) return <>{row.server}</>;
  const path = serverPath(row.cluster_id, { id: row.registered_server_id, reported_server_id: row.server_id ?? null });
  return <Link to={path}>{row.server}</Link>;
}

export function FailedPollsTable({ data }: { data: FailedPolls }) {
  if (data.failed === 0) {
    return <p className="small">No failed polls in the last {data.cycles} cycles.</p>;
  }
  return (
    <>
      <p className="small">
        {data.failed} failed {data.failed === 1 ? "poll" : "polls"} in the last {data.cycles} cycles
        {data.unnamed > 0 ? ` (${data.unnamed} of them not named: cycles stored before servers were kept, or past 100 a cycle)` : ""}:
      </p>
      <div className="scroll-x">
        <table className="data" aria-label="Failed polls by server">
          <thead>
            <tr>
              <th scope="col">Server</th>
              <th scope="col">Cluster</th>
              <th scope="col">Failed polls</th>
              <th scope="col">Last failed</th>
              <th scope="col">Last error</th>
            </tr>
          </thead>
          <tbody>
            {data.servers.map((row) => (
              <tr key={row.registered_server_id}>
                <th scope="row"><ServerCell row={row} /></th>
                <td>{row.cluster ?? "removed"}</td>
                <td>{row.failed}</td>
                <td>{formatTime(row.last_failed_at)}</td>
                <td className="mono small">{row.last_error}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

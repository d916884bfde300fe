// A server's change consumers on its server page: the applications reading its committed changes apart from its
// replicas (ferryd's consumer token), each with where it connected from, the domains it follows, its position and its
// lag per domain, and the last ones the server cut off for not reading — read from the server now by the API and
// refreshed every few seconds; for a kind that lists binlog readers among its replicas (MariaDB), why there is no list.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../../api/client";
import { formatLagSeconds, formatLagTransactions, formatTime } from "../../lib/format";

type Read = Schemas["ServerConsumersRead"];
type Consumer = Schemas["ConsumerRead"];
/** How often the list is read again while the page is open. */
const REFRESH_MS = 5000;

export function useConsumers(clusterId: number, serverId: number) {
  return useQuery({
    queryKey: ["clusters", clusterId, "servers", serverId, "consumers"] as const,
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}/consumers", {
          params: { path: { cluster_id: clusterId, registered_server_id: serverId } },
        }),
      ),
    refetchInterval: REFRESH_MS,
  });
}

/** A consumer's lag in words, per domain: "domain 1: 3 txn · 400 ms". */
export function lagWords(consumer: Consumer): string {
  const domains = Object.entries(consumer.lag).sort(([a], [b]) => Number(a) - Number(b));
  if (domains.length === 0) return "—";
  return domains
    .map(([d, lag]) => `domain ${d}: ${formatLagTransactions(lag.transactions)} · ${formatLagSeconds(lag.seconds)}`)
    .join("; ");
}

export function Consumers({ clusterId, serverId }: { clusterId: number; serverId: number }) {
  const read = useConsumers(clusterId, serverId);
  if (read.isPending) return <p>Reading…</p>;
  if (read.error) return <p className="error">Change consumers could not be read: {String((read.error as Error).message ?? read.error)}</p>;
  const data: Read = read.data;
  return (
    <div className="consumers">
      <p>{data.words}</p>
      {data.consumers.length > 0 ? (
        <div className="table-scroll">
          <table aria-label="Change consumers">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">From</th>
                <th scope="col">Domains</th>
                <th scope="col">Position</th>
                <th scope="col">Lag</th>
                <th scope="col">Connected</th>
              </tr>
            </thead>
            <tbody>
              {data.consumers.map((c) => (
                <tr key={`${c.name}/${c.address}`}>
                  <th scope="row">{c.name}</th>
                  <td className="mono">{c.address}</td>
                  <td>{c.domains.length > 0 ? c.domains.join(", ") : "all"}</td>
                  <td>
                    <code>{c.position || "—"}</code>
                  </td>
                  <td>{lagWords(c)}</td>
                  <td>{formatTime(c.connected_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {data.cut_off.length > 0 ? (
        <section aria-label="Consumers cut off">
          <h5>Cut off for not reading ({data.cut_off_total} since the server started)</h5>
          <ul className="small">
            {data.cut_off.map((c) => (
              <li key={`${c.name}/${c.at}`}>
                {formatTime(c.at)} {c.name} ({c.address}) at <code>{c.position || "—"}</code>: {c.reason}
              </li>
            ))}
          </ul>
        </section>
      ) : null}
    </div>
  );
}

// The proxies in front of a cluster (HAProxy, driven by Ferry): where applications write and read, which server
// the writes go to now, and each server's state in the proxy — or why a proxy could not be read. Nothing when no
// proxy fronts the cluster.
import type { Schemas } from "../../api/client";
import { useProxies } from "../../api/queries";

type Proxy = Schemas["ProxyStateRead"];

export function ProxyList({ proxies, names }: { proxies: Proxy[]; names: Map<number, string> }) {
  if (proxies.length === 0) return null;
  const name = (id: number) => names.get(id) ?? `server ${id}`;
  return (
    <section aria-label="Proxies" className="proxies">
      <h2>Proxies</h2>
      <ul>
        {proxies.map((p) => (
          <li key={p.proxy}>
            <span className="mono">{p.proxy}</span>:{" "}
            {!p.reachable ? (
              <span role="alert">{p.error}</span>
            ) : (
              <>
                writes to <span className="mono">{p.writer_addresses.join(", ") || "—"}</span> go to{" "}
                <strong>{p.writer_registered_server_id === null ? "no server" : name(p.writer_registered_server_id)}</strong>; reads at{" "}
                <span className="mono">{p.reader_addresses.join(", ") || "—"}</span> go to{" "}
                {p.servers.filter((s) => s.reader?.startsWith("UP")).map((s) => name(s.registered_server_id)).join(", ") ||
                  "no server"}
                .
              </>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

export function ProxyPanel({ clusterId, names }: { clusterId: number; names: Map<number, string> }) {
  const proxies = useProxies(clusterId);
  return <ProxyList proxies={proxies.data ?? []} names={names} />;
}

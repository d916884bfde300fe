// Add a server to a cluster from its page: its kind, name, address and ports, and whether to discover what it
// replicates with from it. For MariaDB, when the cluster has no logins yet, the form asks for them: write-only, sent
// once (stored encrypted on the cluster), cleared from the form after the request and never shown back.
import { useState, type FormEvent } from "react";
import { useCluster } from "../../api/queries";
import { useAddServer, type AddServerInput, type Added, type ServerKind } from "../../api/serverAdmin";
import { ErrorMessage } from "../../components/QueryState";
import { DiscoveryNotes } from "./DiscoveryNotes";

const LOGINS = { dbUser: "", dbPassword: "", replicationUser: "", replicationPassword: "" };

function Outcome({ added }: { added: Added }) {
  const others = added.discovery ? [...added.discovery.added] : [];
  return (
    <div role="status" aria-label="Added">
      <p>
        Added {added.server.name}
        {added.discovery
          ? `; discovery from it added ${others.length === 0 ? "no other server" : others.map((s) => s.name).join(", ")}` +
            (added.discovery.known.length > 0 ? ` (known already: ${added.discovery.known.map((s) => s.name).join(", ")})` : "")
          : ""}
        .
      </p>
      {added.discovery ? <DiscoveryNotes notes={added.discovery.notes} /> : null}
    </div>
  );
}

export function AddServerForm({ clusterId }: { clusterId: number }) {
  const cluster = useCluster(clusterId);
  const add = useAddServer(clusterId);
  const [kind, setKind] = useState<ServerKind>("ferry");
  const [name, setName] = useState("");
  const [host, setHost] = useState("");
  const [protocolPort, setProtocolPort] = useState("");
  const [adminPort, setAdminPort] = useState("");
  const [discover, setDiscover] = useState(true);
  const [logins, setLogins] = useState(LOGINS);
  const mariadb = kind === "mariadb";
  const needsLogins = mariadb && cluster.data != null && !cluster.data.db_user_set;
  const port = (text: string) => (text.trim() === "" ? null : Number(text));

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const input: AddServerInput = {
      kind, name, host, discover,
      protocolPort: port(protocolPort),
      adminPort: mariadb ? port(protocolPort) : port(adminPort),
      logins: needsLogins ? logins : null,
    };
    // The passwords leave the form with the request: nothing keeps them afterwards.
    setLogins((l) => ({ ...l, dbPassword: "", replicationPassword: "" }));
    add.mutate(input);
  };

  return (
    <form onSubmit={submit} aria-label="Add a server" className="add-server">
      <div>
        <label>
          Kind{" "}
          <select value={kind} onChange={(e) => setKind(e.target.value as ServerKind)}>
            <option value="ferry">ferryd</option>
            <option value="mariadb">MariaDB</option>
          </select>
        </label>{" "}
        <label>
          Server name <input value={name} onChange={(e) => setName(e.target.value)} placeholder="host:port" maxLength={100} />
        </label>
      </div>
      <div>
        <label>
          Host <input required value={host} onChange={(e) => setHost(e.target.value)} />
        </label>{" "}
        <label>
          {mariadb ? "SQL port" : "Protocol port"}{" "}
          <input type="number" min={1} max={65535} required={discover || mariadb} value={protocolPort}
            onChange={(e) => setProtocolPort(e.target.value)} className="narrow" />
        </label>{" "}
        {!mariadb ? (
          <label>
            Admin port{" "}
            <input type="number" min={1} max={65535} required={discover} value={adminPort}
              onChange={(e) => setAdminPort(e.target.value)} className="narrow" />
          </label>
        ) : null}
      </div>
      {needsLogins ? (
        <fieldset>
          <legend>The cluster's logins (write-only: stored encrypted, never shown again)</legend>
          <label>
            Database user{" "}
            <input required autoComplete="off" value={logins.dbUser} onChange={(e) => setLogins({ ...logins, dbUser: e.target.value })} />
          </label>{" "}
          <label>
            Database password{" "}
            <input required type="password" autoComplete="new-password" value={logins.dbPassword}
              onChange={(e) => setLogins({ ...logins, dbPassword: e.target.value })} />
          </label>{" "}
          <label>
            Replication user{" "}
            <input autoComplete="off" value={logins.replicationUser} onChange={(e) => setLogins({ ...logins, replicationUser: e.target.value })} />
          </label>{" "}
          <label>
            Replication password{" "}
            <input type="password" autoComplete="new-password" required={logins.replicationUser !== ""} value={logins.replicationPassword}
              onChange={(e) => setLogins({ ...logins, replicationPassword: e.target.value })} />
          </label>
        </fieldset>
      ) : null}
      <label>
        <input type="checkbox" checked={discover} onChange={(e) => setDiscover(e.target.checked)} /> then discover its
        masters and replicas from it
      </label>{" "}
      <button type="submit" disabled={add.isPending}>
        {add.isPending ? "Adding…" : discover ? "Add and discover" : "Add server"}
      </button>
      {add.error ? <ErrorMessage error={add.error} /> : null}
      {add.data ? <Outcome added={add.data} /> : null}
    </form>
  );
}

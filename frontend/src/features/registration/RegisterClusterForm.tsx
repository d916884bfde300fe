// Register a cluster from one seed server: its kind, address and — for MariaDB — the logins the control plane and
// the replicas use, and an optional CA. The passwords are write-only: sent once, cleared from the form after the
// request, and never shown back (the API answers with `*_set` flags only). Then discovery from the seed.
import { useState, type FormEvent } from "react";
import { Link } from "react-router-dom";
import { useRegisterCluster, type RegisterClusterInput, type Registered, type ServerKind } from "../../api/registration";
import { ErrorMessage } from "../../components/QueryState";
import { Badge } from "../../components/StatusBadge";

const EMPTY: RegisterClusterInput = {
  name: "", kind: "mariadb", host: "", port: 3306, adminPort: null, dbUser: "", dbPassword: "",
  replicationUser: "", replicationPassword: "", tlsCa: "",
};

function LoginFlags({ cluster }: { cluster: Registered["cluster"] }) {
  const flags: [string, boolean][] = [
    ["database user", cluster.db_user_set],
    ["database password", cluster.db_password_set],
    ["replication user", cluster.replication_user_set],
    ["replication password", cluster.replication_password_set],
    ["CA certificate", cluster.tls_ca_set],
  ];
  return (
    <ul aria-label="Stored logins" className="small">
      {flags.map(([what, set]) => (
        <li key={what}>{`${what}: ${set ? "stored" : "not set"}`}</li>
      ))}
    </ul>
  );
}

function Outcome({ registered }: { registered: Registered }) {
  const { cluster, discovery } = registered;
  const servers = [discovery.seed, ...discovery.added, ...discovery.known];
  return (
    <div role="status" aria-label="Registration outcome">
      <p>
        Registered <Link to={`/clusters/${cluster.id}/topology`}>{cluster.name}</Link> with {servers.length} server
        {servers.length === 1 ? "" : "s"}: {servers.map((s) => s.name).join(", ")}.
      </p>
      <LoginFlags cluster={cluster} />
      {cluster.plaintext_transport ? (
        <Badge tone="warn" symbol="⚠">no CA: the control plane speaks to these servers in clear text</Badge>
      ) : null}
      {discovery.notes.length > 0 ? (
        <ul aria-label="Discovery notes" className="small">
          {discovery.notes.map((note, i) => (
            <li key={i}>{note.message}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function RegisterClusterForm() {
  const mutation = useRegisterCluster();
  const [form, setForm] = useState<RegisterClusterInput>(EMPTY);
  const set = <K extends keyof RegisterClusterInput>(key: K, value: RegisterClusterInput[K]) =>
    setForm((f) => ({ ...f, [key]: value }));
  const mariadb = form.kind === "mariadb";

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const sent = form;
    // The passwords leave the form with the request: nothing keeps them afterwards.
    setForm((f) => ({ ...f, dbPassword: "", replicationPassword: "" }));
    mutation.mutate(sent);
  };

  return (
    <form onSubmit={submit} aria-label="Register a cluster">
      <div>
        <label>
          Cluster name{" "}
          <input required value={form.name} onChange={(e) => set("name", e.target.value)} pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*" />
        </label>
        <label>
          Kind{" "}
          <select value={form.kind} onChange={(e) => set("kind", e.target.value as ServerKind)}>
            <option value="mariadb">MariaDB</option>
            <option value="ferry">ferryd</option>
          </select>
        </label>
      </div>
      <fieldset>
        <legend>Seed server (discovery starts here)</legend>
        <label>
          Host <input required value={form.host} onChange={(e) => set("host", e.target.value)} />
        </label>
        <label>
          {mariadb ? "SQL port" : "Protocol port"}{" "}
          <input required type="number" min={1} max={65535} value={form.port} onChange={(e) => set("port", Number(e.target.value))} />
        </label>
        {!mariadb ? (
          <label>
            Admin port{" "}
            <input required type="number" min={1} max={65535} value={form.adminPort ?? ""}
              onChange={(e) => set("adminPort", e.target.value ? Number(e.target.value) : null)} />
          </label>
        ) : null}
      </fieldset>
      {mariadb ? (
        <fieldset>
          <legend>Logins (write-only: stored encrypted, never shown again)</legend>
          <div>
            <label>
              Database user <input required autoComplete="off" value={form.dbUser} onChange={(e) => set("dbUser", e.target.value)} />
            </label>
            <label>
              Database password{" "}
              <input required type="password" autoComplete="new-password" value={form.dbPassword}
                onChange={(e) => set("dbPassword", e.target.value)} />
            </label>
          </div>
          <div>
            <label>
              Replication user{" "}
              <input autoComplete="off" value={form.replicationUser} onChange={(e) => set("replicationUser", e.target.value)} />
            </label>
            <label>
              Replication password{" "}
              <input type="password" autoComplete="new-password" required={form.replicationUser !== ""}
                value={form.replicationPassword} onChange={(e) => set("replicationPassword", e.target.value)} />
            </label>
          </div>
          <label>
            CA certificate (PEM, optional){" "}
            <textarea rows={3} cols={64} value={form.tlsCa} onChange={(e) => set("tlsCa", e.target.value)}
              placeholder="-----BEGIN CERTIFICATE-----" />
          </label>
          {form.tlsCa.trim() === "" ? (
            <p className="small muted">Without a CA the servers are spoken to in clear text: logins cross the network readable.</p>
          ) : null}
        </fieldset>
      ) : null}
      <button type="submit" disabled={mutation.isPending}>
        {mutation.isPending ? "Registering…" : "Register and discover"}
      </button>
      {mutation.error ? <ErrorMessage error={mutation.error} /> : null}
      {mutation.data ? <Outcome registered={mutation.data} /> : null}
    </form>
  );
}

// A server's settings for operators, folded on its page: edit its name, addresses, promotion rule and labels (only
// what changed is sent; a name changes its label everywhere, its page stays where it is since the path names its
// server_id), and remove it from the control plane, which asks for its name typed out first and then goes back to
// the cluster's topology (the database server itself is not touched).
import { useState, type FormEvent } from "react";
import { useNavigate } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { serverChanges, serverForm, useDeleteServer, useUpdateServer, type ServerForm } from "../../api/serverEdit";
import { ErrorMessage } from "../../components/QueryState";

type Server = Schemas["ServerRead"];

const RULES: { value: Schemas["PromotionRule"]; text: string }[] = [
  { value: "prefer", text: "prefer (chosen first)" },
  { value: "neutral", text: "neutral" },
  { value: "prefer_not", text: "prefer not (only when no other)" },
  { value: "must_not", text: "must not (never promoted)" },
];

function EditServer({ server }: { server: Server }) {
  const update = useUpdateServer(server.cluster_id, server.id);
  const [form, setForm] = useState<ServerForm>(() => serverForm(server));
  const changes = serverChanges(server, form);
  const problem = typeof changes === "string" ? changes : null;
  const body = typeof changes === "string" ? {} : changes;
  const set = (patch: Partial<ServerForm>) => setForm({ ...form, ...patch });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!problem) update.mutate(body);
  };
  const portLabel = server.kind === "mariadb" ? "SQL port" : "Protocol port";
  return (
    <form onSubmit={submit} aria-label="Edit the server">
      <fieldset>
        <legend>Edit</legend>
        <label>
          Name <input required maxLength={100} value={form.name} onChange={(e) => set({ name: e.target.value })} />
        </label>{" "}
        <label>
          Host <input required value={form.host} onChange={(e) => set({ host: e.target.value })} />
        </label>{" "}
        <label>
          {portLabel} <input inputMode="numeric" size={6} value={form.protocolPort} onChange={(e) => set({ protocolPort: e.target.value })} />
        </label>{" "}
        <label title={server.kind === "mariadb" ? "Where the control plane speaks SQL to it (usually the SQL port)" : "ferryd's admin API"}>
          Admin port <input inputMode="numeric" size={6} value={form.adminPort} onChange={(e) => set({ adminPort: e.target.value })} />
        </label>{" "}
        <label>
          Promotion rule{" "}
          <select value={form.promotionRule} onChange={(e) => set({ promotionRule: e.target.value as Schemas["PromotionRule"] })}>
            {RULES.map((r) => (
              <option key={r.value} value={r.value}>{r.text}</option>
            ))}
          </select>
        </label>{" "}
        <label>
          Labels <input size={30} placeholder="rack=r4, az=b" value={form.labels} onChange={(e) => set({ labels: e.target.value })} />
        </label>{" "}
        <button type="submit" disabled={update.isPending || problem !== null || Object.keys(body).length === 0}>
          {update.isPending ? "Saving…" : "Save"}
        </button>
        {update.isSuccess && !problem && Object.keys(body).length === 0 ? <span role="status" className="small"> Saved.</span> : null}
        {problem ? <p role="alert" className="error small">{problem}</p> : null}
        {update.error ? <ErrorMessage error={update.error} /> : null}
      </fieldset>
    </form>
  );
}

function RemoveServer({ server }: { server: Server }) {
  const remove = useDeleteServer(server.cluster_id, server.id);
  const navigate = useNavigate();
  const [typed, setTyped] = useState("");
  const submit = (event: FormEvent) => {
    event.preventDefault();
    remove.mutate(undefined, { onSuccess: () => navigate(`/clusters/${server.cluster_id}/topology`, { replace: true }) });
  };
  return (
    <form onSubmit={submit} aria-label="Remove the server">
      <fieldset className="guarded">
        <legend>Remove</legend>
        <p className="small">
          Removes {server.label} and what is recorded about it (positions, lag, connections) from the control plane; the
          database server itself is not touched, and discovery may find it again while others replicate with it.
          Refused while an operation runs.
        </p>
        <label>
          Type <strong className="mono">{server.name}</strong> to confirm{" "}
          <input autoComplete="off" value={typed} onChange={(e) => setTyped(e.target.value)} />
        </label>{" "}
        <button type="submit" className="danger" disabled={typed !== server.name || remove.isPending}>
          {remove.isPending ? "Removing…" : `Remove ${server.name}`}
        </button>
        {remove.error ? <ErrorMessage error={remove.error} /> : null}
      </fieldset>
    </form>
  );
}

export function ServerSettings({ server }: { server: Server }) {
  return (
    <details className="cluster-settings">
      <summary>Server settings: edit, rename, remove</summary>
      <EditServer server={server} />
      <RemoveServer server={server} />
    </details>
  );
}

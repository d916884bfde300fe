// A cluster's settings for operators, folded under the cluster's name: its name, description and automatic failover
// (only what changed is sent), and deleting the cluster, which asks for the cluster's name typed out first (it
// removes everything recorded about it) and then goes back to the overview.
import { useState, type FormEvent } from "react";
import { useNavigate } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { useDeleteCluster, useUpdateCluster, type ClusterUpdate } from "../../api/clusterAdmin";
import { ErrorMessage } from "../../components/QueryState";

type Cluster = Schemas["ClusterRead"];

/** What the form changes, as a PATCH body holding only the changed fields. */
export function changedFields(
  cluster: Cluster,
  form: { name: string; description: string; autoFailover: boolean; enforceReadOnly?: boolean },
): ClusterUpdate {
  const body: ClusterUpdate = {};
  if (form.name.trim() !== cluster.name) body.name = form.name.trim();
  if (form.description !== cluster.description) body.description = form.description;
  if (form.autoFailover !== cluster.auto_failover) body.auto_failover = form.autoFailover;
  if (form.enforceReadOnly !== undefined && form.enforceReadOnly !== cluster.enforce_read_only_replicas) {
    body.enforce_read_only_replicas = form.enforceReadOnly;
  }
  return body;
}

function EditCluster({ cluster }: { cluster: Cluster }) {
  const update = useUpdateCluster(cluster.id);
  const [form, setForm] = useState({
    name: cluster.name,
    description: cluster.description,
    autoFailover: cluster.auto_failover,
    enforceReadOnly: cluster.enforce_read_only_replicas,
  });
  const body = changedFields(cluster, form);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    update.mutate(body);
  };
  return (
    <form onSubmit={submit} aria-label="Edit the cluster">
      <fieldset>
        <legend>Edit</legend>
        <label>
          Name{" "}
          <input required maxLength={100} pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*" title="letters, digits, _ . - (not first)"
            value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
        </label>{" "}
        <label>
          Description{" "}
          <input maxLength={2000} size={40} value={form.description} onChange={(e) => setForm({ ...form, description: e.target.value })} />
        </label>{" "}
        <label>
          <input type="checkbox" checked={form.autoFailover} onChange={(e) => setForm({ ...form, autoFailover: e.target.checked })} />{" "}
          Automatic failover
        </label>{" "}
        <label title="A replica seen writable is made read-only again (audited); off, it is only flagged as a problem. Turning it off needs an admin token">
          <input type="checkbox" checked={form.enforceReadOnly} onChange={(e) => setForm({ ...form, enforceReadOnly: e.target.checked })} />{" "}
          Keep replicas read-only
        </label>{" "}
        <button type="submit" disabled={update.isPending || Object.keys(body).length === 0}>
          {update.isPending ? "Saving…" : "Save"}
        </button>
        {update.isSuccess && Object.keys(body).length === 0 ? <span role="status" className="small"> Saved.</span> : null}
        {update.error ? <ErrorMessage error={update.error} /> : null}
      </fieldset>
    </form>
  );
}

function DeleteCluster({ cluster }: { cluster: Cluster }) {
  const remove = useDeleteCluster(cluster.id);
  const navigate = useNavigate();
  const [typed, setTyped] = useState("");
  const submit = (event: FormEvent) => {
    event.preventDefault();
    remove.mutate(undefined, { onSuccess: () => navigate("/", { replace: true }) });
  };
  return (
    <form onSubmit={submit} aria-label="Delete the cluster">
      <fieldset className="guarded">
        <legend>Delete</legend>
        <p className="small">
          Removes {cluster.name}, its servers and everything recorded about it (positions, operations, drills) from the
          control plane; the database servers themselves are not touched. Refused while an operation runs.
        </p>
        <label>
          Type <strong className="mono">{cluster.name}</strong> to confirm{" "}
          <input autoComplete="off" value={typed} onChange={(e) => setTyped(e.target.value)} />
        </label>{" "}
        <button type="submit" className="danger" disabled={typed !== cluster.name || remove.isPending}>
          {remove.isPending ? "Deleting…" : `Delete ${cluster.name}`}
        </button>
        {remove.error ? <ErrorMessage error={remove.error} /> : null}
      </fieldset>
    </form>
  );
}

export function ClusterSettings({ cluster }: { cluster: Cluster }) {
  return (
    <details className="cluster-settings">
      <summary>Cluster settings</summary>
      <EditCluster cluster={cluster} />
      <DeleteCluster cluster={cluster} />
    </details>
  );
}

// A cluster's settings for operators, folded under the cluster's name: its name, description, automatic failover,
// the replica guard and its busy-cluster switchover settings — the max window (empty: the control plane's default)
// and the candidate's parallel apply workers for the catch-up — (only what changed is sent), and deleting the cluster, which asks for the cluster's name typed out first (it
// removes everything recorded about it) and then goes back to the overview.
import { useState, type FormEvent } from "react";
import { useNavigate } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { useDeleteCluster, useUpdateCluster, type ClusterUpdate } from "../../api/clusterAdmin";
import { ErrorMessage } from "../../components/QueryState";

type Cluster = Schemas["ClusterRead"];

/** The busy-cluster settings as typed: numbers as text, a max window left empty meaning the default. */
interface BusyForm {
  maxWindow?: string;
  parallelWorkers?: string;
}

/** What is wrong with the typed busy-cluster settings, in words (null: nothing). */
export function busyProblem(form: BusyForm): string | null {
  const window = (form.maxWindow ?? "").trim();
  if (window !== "" && !(Number(window) > 0 && Number(window) <= 3600)) {
    return "The max window is more than 0 and at most 3600 seconds (empty: the control plane's default).";
  }
  const workers = (form.parallelWorkers ?? "0").trim();
  if (!/^\d+$/.test(workers) || Number(workers) > 256) return "Catch-up parallel workers: a whole number from 0 to 256.";
  return null;
}

/** What the form changes, as a PATCH body holding only the changed fields. */
export function changedFields(
  cluster: Cluster,
  form: { name: string; description: string; autoFailover: boolean; enforceReadOnly?: boolean } & BusyForm,
): ClusterUpdate {
  const body: ClusterUpdate = {};
  if (form.name.trim() !== cluster.name) body.name = form.name.trim();
  if (form.description !== cluster.description) body.description = form.description;
  if (form.autoFailover !== cluster.auto_failover) body.auto_failover = form.autoFailover;
  if (form.enforceReadOnly !== undefined && form.enforceReadOnly !== cluster.enforce_read_only_replicas) {
    body.enforce_read_only_replicas = form.enforceReadOnly;
  }
  if (form.maxWindow !== undefined) {
    const window = form.maxWindow.trim() === "" ? null : Number(form.maxWindow);
    if (window !== (cluster.max_window_s ?? null)) body.max_window_s = window;
  }
  if (form.parallelWorkers !== undefined && Number(form.parallelWorkers) !== (cluster.catch_up_parallel_workers ?? 0)) {
    body.catch_up_parallel_workers = Number(form.parallelWorkers);
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
    maxWindow: cluster.max_window_s == null ? "" : String(cluster.max_window_s),
    parallelWorkers: String(cluster.catch_up_parallel_workers ?? 0),
  });
  const problem = busyProblem(form);
  const body = problem ? {} : changedFields(cluster, form);
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
        <label title="A switchover's or drill's write-unavailability budget: the candidate catches up while the master takes writes until the predicted window fits it. Empty: the control plane's default (10 s)">
          Max window (s){" "}
          <input type="number" min={0} max={3600} step="any" size={6} placeholder="default" value={form.maxWindow}
            onChange={(e) => setForm({ ...form, maxWindow: e.target.value })} />
        </label>{" "}
        <label title="During a switchover's or drill's catch-up the candidate applies with this many parallel workers, put back afterwards. 0: off">
          Catch-up parallel workers{" "}
          <input type="number" min={0} max={256} step={1} size={4} value={form.parallelWorkers}
            onChange={(e) => setForm({ ...form, parallelWorkers: e.target.value })} />
        </label>{" "}
        <button type="submit" disabled={update.isPending || Object.keys(body).length === 0}>
          {update.isPending ? "Saving…" : "Save"}
        </button>
        {update.isSuccess && !problem && Object.keys(body).length === 0 ? <span role="status" className="small"> Saved.</span> : null}
        {problem ? (
          <p role="alert" className="error small">
            {problem}
          </p>
        ) : null}
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

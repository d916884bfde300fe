// The form that puts one server in maintenance: why, and for how long (it ends by itself then; at most 7 days).
// The owner is the signed-in token, recorded by the API.
import { useState, type FormEvent } from "react";
import { useSetMaintenance } from "../../api/mutations";
import { ErrorMessage } from "../../components/QueryState";
import { maintenanceBody, UNITS, type Unit } from "./maintenance";

export function MaintenanceForm({ clusterId, server, onDone }: {
  clusterId: number;
  server: { id: number; name: string };
  onDone: () => void;
}) {
  const [reason, setReason] = useState("");
  const [amount, setAmount] = useState("1");
  const [unit, setUnit] = useState<Unit>("hours");
  const [problem, setProblem] = useState<string | null>(null);
  const setMaintenance = useSetMaintenance(clusterId);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const checked = maintenanceBody({ reason, amount, unit });
    if (!checked.ok) {
      setProblem(checked.error);
      return;
    }
    setProblem(null);
    // A promise, not mutate's callback: the form unmounts as soon as the refreshed list shows the maintenance, and
    // its parent must still hear that it is done.
    setMaintenance.mutateAsync({ serverId: server.id, body: checked.body }).then(onDone, () => undefined);
  };
  return (
    <form className="maintenance-form" aria-label={`Maintenance of ${server.name}`} onSubmit={submit}>
      <label>
        Reason <input value={reason} onChange={(e) => setReason(e.target.value)} maxLength={500} aria-required="true" />
      </label>{" "}
      <label>
        For <input type="number" min={1} step={1} value={amount} onChange={(e) => setAmount(e.target.value)} className="narrow" />
      </label>{" "}
      <select aria-label="Unit" value={unit} onChange={(e) => setUnit(e.target.value as Unit)}>
        {Object.keys(UNITS).map((u) => (
          <option key={u} value={u}>{u}</option>
        ))}
      </select>{" "}
      <button type="submit" className="danger" disabled={setMaintenance.isPending}>
        Put {server.name} in maintenance
      </button>{" "}
      <button type="button" onClick={onDone}>Cancel</button>
      {problem ? <p role="alert" className="error">{problem}</p> : null}
      {setMaintenance.error ? <ErrorMessage error={setMaintenance.error} /> : null}
    </form>
  );
}

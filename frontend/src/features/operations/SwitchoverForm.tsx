// Planned switchover: choose the source whose role moves (on a cluster of several masters or with an intermediate
// master; a single master is the source by itself), a candidate among its replicas (or let the orchestrator pick the
// best; a replica delayed on purpose says so, as it is never the best), optionally the window's budget (max window: how long writes may be held; unset, the cluster's or the control
// plane's), preview — an intermediate master's preview shows the plan per domain, a master's the forecast (rates,
// predicted window) and advice — type the cluster's name, run; its catch-up before the window is shown as it waits,
// then the catch-up phase and the window's steps. The run names the candidate, source and budget the preview used, so
// what runs is what was shown.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useSwitchover, type SwitchoverBody } from "../../api/mutations";
import { formatLagSeconds } from "../../lib/format";
import { MoveReport } from "./CatchUp";
import { GuardedAction } from "./GuardedAction";
import { masters as mastersOf } from "./operationFacts";
import { CandidatePicker, SourcePicker } from "./ServerPicker";
import { SwitchPlan } from "./SwitchPlan";

type Node = Schemas["TopologyNode"];
type Edge = Schemas["TopologyEdge"];

interface Props {
  clusterId: number;
  clusterName: string;
  nodes: Node[];
  edges?: Edge[];
  serverName: (id: number) => string;
}

export function SwitchoverForm({ clusterId, clusterName, nodes, edges = [], serverName }: Props) {
  const mutation = useSwitchover(clusterId);
  const [candidate, setCandidate] = useState<string>("best");
  const [maxWindow, setMaxWindow] = useState("");
  const sources = nodes.filter((n) => n.role === "master" || n.role === "intermediate");
  const masters = nodes.filter((n) => n.role === "master");
  const single = sources.length === 1 ? sources[0] : null;
  const [picked, setPicked] = useState<number | null>(null);
  const source = single ?? sources.find((n) => n.registered_server_id === picked) ?? null;
  const below = new Set(edges.filter((e) => e.master_registered_server_id === source?.registered_server_id).map((e) => e.replica_registered_server_id));
  const replicas = source
    ? nodes.filter((n) => below.has(n.registered_server_id))
    : nodes.filter((n) => n.role === "replica" || n.role === "intermediate");
  const candidateId = candidate === "best" ? null : Number(candidate);
  // A replica's configured delay from the source (any source while none is chosen): never the orchestrator's choice.
  const delays = new Map<number, number>();
  for (const e of edges) {
    const delay = e.settings?.delay_s ?? 0;
    if (delay > 0 && (source === null || e.master_registered_server_id === source.registered_server_id)) {
      delays.set(e.replica_registered_server_id, Math.max(delay, delays.get(e.replica_registered_server_id) ?? 0));
    }
  }
  const delayNote = (node: Node) => {
    const delay = delays.get(node.registered_server_id);
    return delay ? `replicates ${formatLagSeconds(delay)} behind on purpose (never chosen as best)` : null;
  };
  const needsSource = single === null && sources.length > 1;
  // Named only where there is a choice: a single master's switchover sends what it always did.
  const sourceField = needsSource && source ? { source_registered_server_id: source.registered_server_id } : {};
  // The budget only when given (unset: the cluster's, else the control plane's); a value out of bounds holds the
  // preview back (the field says why).
  const budget = maxWindow.trim() === "" ? null : Number(maxWindow);
  const budgetValid = budget === null || (Number.isFinite(budget) && budget > 0 && budget <= 3600);
  const budgetField = budget !== null && budgetValid ? { max_window_s: budget } : {};

  return (
    <GuardedAction<SwitchoverBody>
      clusterId={clusterId}
      clusterName={clusterName}
      title="Switchover"
      verb="Switch over"
      typedConfirmation
      paramsKey={`${candidate}/${source?.registered_server_id ?? "none"}/${maxWindow}`}
      previewBody={() =>
        (needsSource && source === null) || !budgetValid
          ? null
          : {
              dry_run: true,
              candidate_registered_server_id: candidateId,
              ...sourceField,
              expected_master_registered_server_id: source?.registered_server_id ?? masters[0]?.registered_server_id ?? null,
              ...budgetField,
            }
      }
      runBody={(preview) => ({
        dry_run: false,
        candidate_registered_server_id: mastersOf(preview).newMaster ?? candidateId,
        ...sourceField,
        expected_master_registered_server_id: mastersOf(preview).oldMaster ?? source?.registered_server_id ?? null,
        ...budgetField,
      })}
      start={(variables) => mutation.mutateAsync(variables)}
      serverName={serverName}
      outcome={(operation) => (
        <>
          <SwitchPlan operation={operation} />
          {operation.type === "switchover" ? <MoveReport figures={operation.result} /> : null}
        </>
      )}
    >
      {needsSource ? (
        <p className="small">
          This cluster has {masters.length} master{masters.length === 1 ? "" : "s"} and{" "}
          {sources.length - masters.length} intermediate master{sources.length - masters.length === 1 ? "" : "s"}:
          choose the source whose role moves. An intermediate master&apos;s candidate takes over its connections to
          its masters under the same names; its masters keep taking writes.
        </p>
      ) : (
        <p className="small">
          Current master: <strong>{source ? source.name : "none found"}</strong>. The candidate first catches up while
          the master still takes writes, until the predicted window fits the max window; then the old master turns
          read-only, the candidate applies what is left, is promoted, and every other server follows it.
        </p>
      )}
      <SourcePicker
        label="Source"
        sources={sources}
        value={picked}
        onPick={(id) => {
          setPicked(id);
          setCandidate("best");
        }}
      />
      <CandidatePicker bestLabel="Best replica (chosen by the orchestrator)" candidates={replicas} value={candidate} onChange={setCandidate}
        note={delayNote} />
      <label title="Before the master goes read-only the candidate catches up while the master takes writes, until the predicted window fits this">
        Max window (s){" "}
        <input type="number" min={0} max={3600} step="any" inputMode="decimal" placeholder={`cluster's default`}
          value={maxWindow} onChange={(e) => setMaxWindow(e.target.value)} aria-invalid={!budgetValid} />
      </label>
      {budgetValid ? null : (
        <p role="alert" className="error small">
          The max window is more than 0 and at most 3600 seconds.
        </p>
      )}
    </GuardedAction>
  );
}

// Planned switchover: choose the source whose role moves (on a cluster of several masters or with an intermediate
// master; a single master is the source by itself), a candidate among its replicas (or let the orchestrator pick the
// best), preview — an intermediate master's preview shows the plan per domain — type the cluster's name, run. The
// run names the candidate and source the preview chose, so what runs is what was shown.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useSwitchover, type SwitchoverBody } from "../../api/mutations";
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
  const sources = nodes.filter((n) => n.role === "master" || n.role === "intermediate");
  const masters = nodes.filter((n) => n.role === "master");
  const single = sources.length === 1 ? sources[0] : null;
  const [picked, setPicked] = useState<number | null>(null);
  const source = single ?? sources.find((n) => n.server_id === picked) ?? null;
  const below = new Set(edges.filter((e) => e.master_server_id === source?.server_id).map((e) => e.replica_server_id));
  const replicas = source
    ? nodes.filter((n) => below.has(n.server_id))
    : nodes.filter((n) => n.role === "replica" || n.role === "intermediate");
  const candidateId = candidate === "best" ? null : Number(candidate);
  const needsSource = single === null && sources.length > 1;
  // Named only where there is a choice: a single master's switchover sends what it always did.
  const sourceField = needsSource && source ? { source_server_id: source.server_id } : {};

  return (
    <GuardedAction<SwitchoverBody>
      clusterId={clusterId}
      clusterName={clusterName}
      title="Switchover"
      verb="Switch over"
      typedConfirmation
      paramsKey={`${candidate}/${source?.server_id ?? "none"}`}
      previewBody={() =>
        needsSource && source === null
          ? null
          : {
              dry_run: true,
              candidate_server_id: candidateId,
              ...sourceField,
              expected_master_server_id: source?.server_id ?? masters[0]?.server_id ?? null,
            }
      }
      runBody={(preview) => ({
        dry_run: false,
        candidate_server_id: mastersOf(preview).newMaster ?? candidateId,
        ...sourceField,
        expected_master_server_id: mastersOf(preview).oldMaster ?? source?.server_id ?? null,
      })}
      start={(variables) => mutation.mutateAsync(variables)}
      serverName={serverName}
      outcome={(operation) => <SwitchPlan operation={operation} />}
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
          Current master: <strong>{source ? source.name : "none found"}</strong>. The old master turns read-only, the
          candidate catches up to its position, is promoted, and every other server follows it.
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
      <CandidatePicker bestLabel="Best replica (chosen by the orchestrator)" candidates={replicas} value={candidate} onChange={setCandidate} />
    </GuardedAction>
  );
}

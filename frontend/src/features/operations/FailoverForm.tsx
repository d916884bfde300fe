// Failover from a lost source: on a cluster of several masters or with intermediate masters, which one (else the
// only master); a candidate or the most advanced replica; preview (the candidates and why the others are not, the
// change consumers the move affects and what happens to their streams — a lost master's cannot be listed, and the
// preview says so), typed confirmation, run.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useFailover, type FailoverBody } from "../../api/mutations";
import { GuardedAction } from "./GuardedAction";
import { masters } from "./operationFacts";
import { ReplacementConsumers } from "./PlanConsumers";
import { CandidatePicker, SourcePicker } from "./ServerPicker";

interface Props {
  clusterId: number;
  clusterName: string;
  nodes: Schemas["TopologyNode"][];
  edges?: Schemas["TopologyEdge"][];
  serverName: (id: number) => string;
}

export function FailoverForm({ clusterId, clusterName, nodes, edges = [], serverName }: Props) {
  const mutation = useFailover(clusterId);
  const [candidate, setCandidate] = useState("best");
  const [picked, setPicked] = useState<number | null>(null);
  const candidateId = candidate === "best" ? null : Number(candidate);
  const sources = nodes.filter((n) => n.role === "master" || n.role === "intermediate");
  const needsSource = sources.length > 1;
  const below = new Set(edges.filter((e) => e.master_registered_server_id === picked).map((e) => e.replica_registered_server_id));
  const others = needsSource && picked !== null ? nodes.filter((n) => below.has(n.registered_server_id)) : nodes.filter((n) => n.role !== "master");
  // Named only where there is a choice: a single master's failover sends what it always did.
  const sourceField = needsSource && picked !== null ? { source_registered_server_id: picked } : {};
  return (
    <GuardedAction<FailoverBody>
      clusterId={clusterId}
      clusterName={clusterName}
      title="Failover"
      verb="Fail over"
      typedConfirmation
      paramsKey={`${candidate}/${picked ?? "none"}`}
      previewBody={() => ({ dry_run: true, candidate_registered_server_id: candidateId, ...sourceField })}
      runBody={(preview) => ({
        dry_run: false,
        candidate_registered_server_id: candidateId ?? masters(preview).newMaster,
        ...sourceField,
      })}
      start={(variables) => mutation.mutateAsync(variables)}
      serverName={serverName}
      outcome={(operation) => <ReplacementConsumers operation={operation} />}
    >
      <p className="small">
        Only when a source is lost: the most advanced replica (levelled with its peers first) is promoted, the
        others repointed, the old source fenced. A delayed or <code>must_not</code> replica is never chosen nor
        waited for. The outcome says what may have been lost.
      </p>
      <SourcePicker
        label="Lost source"
        sources={sources}
        value={picked}
        onPick={(id) => {
          setPicked(id);
          setCandidate("best");
        }}
      />
      <CandidatePicker bestLabel="Most advanced replica" candidates={others} value={candidate} onChange={setCandidate} />
    </GuardedAction>
  );
}

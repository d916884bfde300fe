// Failover from a lost master: candidate or the most advanced replica; preview, typed confirmation, run.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useFailover, type FailoverBody } from "../../api/mutations";
import { GuardedAction } from "./GuardedAction";
import { numberResult } from "./operationFacts";
import { CandidatePicker } from "./ServerPicker";

interface Props {
  clusterId: number;
  clusterName: string;
  nodes: Schemas["TopologyNode"][];
  serverName: (id: number) => string;
}

export function FailoverForm({ clusterId, clusterName, nodes, serverName }: Props) {
  const mutation = useFailover(clusterId);
  const [candidate, setCandidate] = useState("best");
  const candidateId = candidate === "best" ? null : Number(candidate);
  const others = nodes.filter((n) => n.role !== "master");
  return (
    <GuardedAction<FailoverBody>
      clusterId={clusterId}
      clusterName={clusterName}
      title="Failover"
      verb="Fail over"
      typedConfirmation
      paramsKey={candidate}
      previewBody={() => ({ dry_run: true, candidate_server_id: candidateId })}
      runBody={(preview) => ({
        dry_run: false,
        candidate_server_id: candidateId ?? numberResult(preview, "new_master_server_id"),
      })}
      start={(variables) => mutation.mutateAsync(variables)}
      serverName={serverName}
    >
      <p className="small">
        Only when the master is lost: the most advanced replica (levelled with its peers first) is promoted, the
        others repointed, the old master fenced. The outcome says what may have been lost.
      </p>
      <CandidatePicker bestLabel="Most advanced replica" candidates={others} value={candidate} onChange={setCandidate} />
    </GuardedAction>
  );
}

// Planned switchover: choose a candidate (or let the orchestrator pick the best replica), preview, type the
// cluster's name, run. The run names the candidate and master the preview chose, so what runs is what was shown.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useSwitchover, type SwitchoverBody } from "../../api/mutations";
import { GuardedAction } from "./GuardedAction";
import { numberResult } from "./operationFacts";
import { CandidatePicker } from "./ServerPicker";

type Node = Schemas["TopologyNode"];

interface Props {
  clusterId: number;
  clusterName: string;
  nodes: Node[];
  serverName: (id: number) => string;
}

export function SwitchoverForm({ clusterId, clusterName, nodes, serverName }: Props) {
  const mutation = useSwitchover(clusterId);
  const [candidate, setCandidate] = useState<string>("best");
  const master = nodes.find((n) => n.role === "master") ?? null;
  const replicas = nodes.filter((n) => n.role === "replica" || n.role === "intermediate");
  const candidateId = candidate === "best" ? null : Number(candidate);

  return (
    <GuardedAction<SwitchoverBody>
      clusterId={clusterId}
      clusterName={clusterName}
      title="Switchover"
      verb="Switch over"
      typedConfirmation
      paramsKey={`${candidate}/${master?.server_id ?? "none"}`}
      previewBody={() => ({
        dry_run: true,
        candidate_server_id: candidateId,
        expected_master_server_id: master?.server_id ?? null,
      })}
      runBody={(preview) => ({
        dry_run: false,
        candidate_server_id: numberResult(preview, "new_master_server_id") ?? candidateId,
        expected_master_server_id: numberResult(preview, "old_master_server_id") ?? master?.server_id ?? null,
      })}
      start={(variables) => mutation.mutateAsync(variables)}
      serverName={serverName}
    >
      <p className="small">
        Current master: <strong>{master ? master.name : "none found"}</strong>. The old master turns read-only, the
        candidate catches up to its position, is promoted, and every other server follows it.
      </p>
      <CandidatePicker bestLabel="Best replica (chosen by the orchestrator)" candidates={replicas} value={candidate} onChange={setCandidate} />
    </GuardedAction>
  );
}

// Read-only on/off and bring-level (START … UNTIL another server's position, then wait): each previewed by a dry
// run and confirmed before it runs.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useBringLevel, useReadOnly } from "../../api/mutations";
import { GuardedAction } from "./GuardedAction";
import { ServerPicker } from "./ServerPicker";

interface Props {
  clusterId: number;
  clusterName: string;
  nodes: Schemas["TopologyNode"][];
  serverName: (id: number) => string;
}

export function ReadOnlyForm({ clusterId, clusterName, nodes, serverName }: Props) {
  const mutation = useReadOnly(clusterId);
  const [server, setServer] = useState<number | null>(null);
  const [readOnly, setReadOnly] = useState(true);
  const body = (dryRun: boolean) => (server === null ? null : { dry_run: dryRun, registered_server_id: server, read_only: readOnly });
  const isMaster = nodes.find((n) => n.registered_server_id === server)?.role === "master";
  return (
    <GuardedAction<Schemas["ReadOnlyRequest"]>
      clusterId={clusterId}
      clusterName={clusterName}
      title="Read-only"
      verb={readOnly ? "Set read-only" : "Make writable"}
      typedConfirmation={isMaster && readOnly}
      paramsKey={`${server}/${readOnly}`}
      previewBody={() => body(true)}
      runBody={() => body(false)!}
      start={(v) => mutation.mutateAsync(v)}
      serverName={serverName}
    >
      <ServerPicker label="Server" nodes={nodes} value={server} onChange={setServer} />
      <fieldset className="inline">
        <legend>Read-only</legend>
        <label>
          <input type="radio" name="read-only" checked={readOnly} onChange={() => setReadOnly(true)} /> on
        </label>
        <label>
          <input type="radio" name="read-only" checked={!readOnly} onChange={() => setReadOnly(false)} /> off
        </label>
      </fieldset>
      {isMaster && readOnly ? <p className="small">⚠ This is the master: its clients cannot write until it is writable again.</p> : null}
    </GuardedAction>
  );
}

export function BringLevelForm({ clusterId, clusterName, nodes, serverName }: Props) {
  const mutation = useBringLevel(clusterId);
  const [server, setServer] = useState<number | null>(null);
  const [source, setSource] = useState<number | null>(null);
  const body = (dryRun: boolean) =>
    server === null || source === null ? null : { dry_run: dryRun, registered_server_id: server, source_registered_server_id: source };
  return (
    <GuardedAction<Schemas["BringLevelRequest"]>
      clusterId={clusterId}
      clusterName={clusterName}
      title="Bring level"
      verb="Bring level"
      typedConfirmation={false}
      paramsKey={`${server}/${source}`}
      previewBody={() => body(true)}
      runBody={() => body(false)!}
      start={(v) => mutation.mutateAsync(v)}
      serverName={serverName}
    >
      <ServerPicker label="Server" nodes={nodes} value={server} onChange={setServer} />
      <ServerPicker label="Level with" nodes={nodes} value={source} onChange={setSource} exclude={server} />
    </GuardedAction>
  );
}

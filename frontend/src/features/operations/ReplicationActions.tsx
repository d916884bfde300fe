// Start and stop replication (optionally START … UNTIL a position) and repoint a replica to another master by
// GTID: each previewed by a dry run and confirmed before it runs.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { useRepoint, useStartReplication, useStopReplication } from "../../api/mutations";
import { GuardedAction } from "./GuardedAction";
import { ServerPicker } from "./ServerPicker";

interface Props {
  clusterId: number;
  clusterName: string;
  nodes: Schemas["TopologyNode"][];
  serverName: (id: number) => string;
}

type StartOrStop = Schemas["StartReplicationRequest"] | Schemas["StopReplicationRequest"];

export function StartStopReplication({ clusterId, clusterName, nodes, serverName }: Props) {
  const start = useStartReplication(clusterId);
  const stop = useStopReplication(clusterId);
  const [action, setAction] = useState<"start" | "stop">("stop");
  const [server, setServer] = useState<number | null>(null);
  const [connection, setConnection] = useState("");
  const [until, setUntil] = useState("");
  const body = (dryRun: boolean): StartOrStop | null =>
    server === null
      ? null
      : action === "start"
        ? { dry_run: dryRun, registered_server_id: server, connection: connection || null, until: until.trim() || null }
        : { dry_run: dryRun, registered_server_id: server, connection: connection || null };
  return (
    <GuardedAction<StartOrStop>
      clusterId={clusterId}
      clusterName={clusterName}
      title="Start or stop replication"
      verb={action === "start" ? "Start replication" : "Stop replication"}
      typedConfirmation={false}
      paramsKey={`${action}/${server}/${connection}/${until}`}
      previewBody={() => body(true)}
      runBody={() => body(false)!}
      start={(v) => (action === "start" ? start.mutateAsync(v) : stop.mutateAsync(v))}
      serverName={serverName}
    >
      <fieldset className="inline">
        <legend>Action</legend>
        <label>
          <input type="radio" name="repl-action" checked={action === "stop"} onChange={() => setAction("stop")} /> stop
        </label>
        <label>
          <input type="radio" name="repl-action" checked={action === "start"} onChange={() => setAction("start")} /> start
        </label>
      </fieldset>
      <ServerPicker label="Replica" nodes={nodes} value={server} onChange={setServer} />
      <label>
        Connection <input value={connection} onChange={(e) => setConnection(e.target.value)} placeholder="its only one" />
      </label>
      {action === "start" ? (
        <label>
          Until position <input value={until} onChange={(e) => setUntil(e.target.value)} placeholder="e.g. 0-1-100,1-2-50" className="mono" />
        </label>
      ) : null}
    </GuardedAction>
  );
}

export function RepointForm({ clusterId, clusterName, nodes, serverName }: Props) {
  const mutation = useRepoint(clusterId);
  const [server, setServer] = useState<number | null>(null);
  const [master, setMaster] = useState<number | null>(null);
  const [useGtid, setUseGtid] = useState<"slave_pos" | "current_pos">("slave_pos");
  const body = (dryRun: boolean): Schemas["RepointRequest"] | null =>
    server === null || master === null ? null : { dry_run: dryRun, registered_server_id: server, master_registered_server_id: master, use_gtid: useGtid };
  return (
    <GuardedAction<Schemas["RepointRequest"]>
      clusterId={clusterId}
      clusterName={clusterName}
      title="Repoint"
      verb="Repoint"
      typedConfirmation={false}
      paramsKey={`${server}/${master}/${useGtid}`}
      previewBody={() => body(true)}
      runBody={() => body(false)!}
      start={(v) => mutation.mutateAsync(v)}
      serverName={serverName}
    >
      <ServerPicker label="Replica" nodes={nodes} value={server} onChange={setServer} />
      <ServerPicker label="New master" nodes={nodes} value={master} onChange={setMaster} exclude={server} />
      <label>
        Start from{" "}
        <select value={useGtid} onChange={(e) => setUseGtid(e.target.value as "slave_pos" | "current_pos")}>
          <option value="slave_pos">slave_pos (a replica)</option>
          <option value="current_pos">current_pos (a former master)</option>
        </select>
      </label>
    </GuardedAction>
  );
}

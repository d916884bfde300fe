// The audit log across the control plane: every state-changing request (token, cluster and server changes, each
// operation's run or dry run, refusals), newest first, filtered by actor, action, cluster, server, outcome and time;
// every filter in the URL (?actor=alice&action=switchover&cluster=2&server=5&outcome=denied&range=24h).
import { useMemo } from "react";
import { useAudit, useClustersOverview, useServers } from "../api/queries";
import { QueryState } from "../components/QueryState";
import { AuditTable } from "../features/audit/AuditTable";
import { useUrlChoice, useUrlString } from "../lib/useUrlState";

const OUTCOMES = ["all", "succeeded", "failed", "denied"] as const;
const RANGES = ["all", "1h", "24h", "7d"] as const;
const RANGE_MS: Record<Exclude<(typeof RANGES)[number], "all">, number> = {
  "1h": 3_600_000,
  "24h": 86_400_000,
  "7d": 7 * 86_400_000,
};
const RANGE_WORDS: Record<(typeof RANGES)[number], string> = {
  all: "any time",
  "1h": "the last hour",
  "24h": "the last 24 hours",
  "7d": "the last 7 days",
};

const positiveInt = (text: string | null): number | null => {
  const value = Number(text);
  return text && Number.isSafeInteger(value) && value > 0 ? value : null;
};

function ServerChoice({ clusterId, serverId, onChange }: { clusterId: number; serverId: number | null; onChange: (id: string | null) => void }) {
  const servers = useServers(clusterId);
  return (
    <label>
      Server{" "}
      <select value={serverId ?? ""} onChange={(e) => onChange(e.target.value || null)}>
        <option value="">any</option>
        {(servers.data ?? []).map((server) => (
          <option key={server.id} value={server.id}>
            {server.name}
          </option>
        ))}
      </select>
    </label>
  );
}

export function AuditPage() {
  const [actor, setActor] = useUrlString("actor");
  const [action, setAction] = useUrlString("action");
  const [clusterText, setCluster] = useUrlString("cluster");
  const [serverText, setServer] = useUrlString("server");
  const [outcome, setOutcome] = useUrlChoice("outcome", OUTCOMES, "all");
  const [range, setRange] = useUrlChoice("range", RANGES, "all");
  const clusterId = positiveInt(clusterText);
  const serverId = clusterId == null ? null : positiveInt(serverText);
  // The window's start, fixed while the range is (a sliding start would make a new query every render).
  const since = useMemo(() => (range === "all" ? null : new Date(Date.now() - RANGE_MS[range]).toISOString()), [range]);
  const clusters = useClustersOverview();
  const names = useMemo(() => new Map((clusters.data ?? []).map((c) => [c.id, c.name])), [clusters.data]);
  const audit = useAudit({
    clusterId, serverId, actor: actor || null, action: action || null, outcome: outcome === "all" ? null : outcome,
    since, limit: 500,
  });
  return (
    <section aria-label="Audit log">
      <h1>Audit log</h1>
      <form className="toolbar" role="search" aria-label="Audit filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Actor{" "}
          <input value={actor ?? ""} onChange={(e) => setActor(e.target.value || null)} placeholder="token name" />
        </label>
        <label>
          Action{" "}
          <input value={action ?? ""} onChange={(e) => setAction(e.target.value || null)} placeholder="e.g. switchover" />
        </label>
        <label>
          Cluster{" "}
          <select
            value={clusterId ?? ""}
            onChange={(e) => {
              setServer(null);
              setCluster(e.target.value || null);
            }}
          >
            <option value="">any</option>
            {(clusters.data ?? []).map((cluster) => (
              <option key={cluster.id} value={cluster.id}>
                {cluster.name}
              </option>
            ))}
          </select>
        </label>
        {clusterId != null ? <ServerChoice clusterId={clusterId} serverId={serverId} onChange={setServer} /> : null}
        <label>
          Outcome{" "}
          <select value={outcome} onChange={(e) => setOutcome(e.target.value as (typeof OUTCOMES)[number])}>
            {OUTCOMES.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </label>
        <label>
          When{" "}
          <select value={range} onChange={(e) => setRange(e.target.value as (typeof RANGES)[number])}>
            {RANGES.map((r) => (
              <option key={r} value={r}>
                {RANGE_WORDS[r]}
              </option>
            ))}
          </select>
        </label>
      </form>
      <QueryState isPending={audit.isPending} error={audit.error} what="audit log">
        {audit.data?.length === 0 ? <p className="muted">Nothing recorded that matches.</p> : null}
        {audit.data && audit.data.length > 0 ? <AuditTable entries={audit.data} clusterNames={names} /> : null}
        {audit.data?.length === 500 ? <p className="small muted">The newest 500 shown; narrow the filters for older rows.</p> : null}
      </QueryState>
    </section>
  );
}

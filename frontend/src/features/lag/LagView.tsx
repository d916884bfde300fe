// The Lag tab: lag in seconds and in transactions per replica per domain over the last 5 min / 15 min / 1 h / 6 h /
// 24 h (live or paused) or a custom range; dragging across a chart zooms into a custom range. Filters by domain and
// by replica; the legend hides or shows single series (in both charts); the operations that really ran in the range
// are marked on both (and a failure to read them is said); a connection's configured delay is a band on the seconds
// chart. A series is drawn for the whole range from its samples, whatever its server's role is now. Range, live and filters in the URL (?range=1h&live=paused&domains=1&servers=4,
// ?range=custom&from=…&to=…).
import { useCallback, useMemo, useState } from "react";
import { useOperationHistory, type OperationType } from "../../api/history";
import { useLagHistory, useServers, useTopology } from "../../api/queries";
import { LAG_RANGE_MS } from "../../api/queryKeys";
import { LiveToggle, useLiveChoice } from "../../components/LiveToggle";
import { QueryState } from "../../components/QueryState";
import { useThrottled } from "../../lib/useThrottled";
import { useTimeWindow } from "../../lib/useTimeWindow";
import { useUrlIntList } from "../../lib/useUrlState";
import { LagChart } from "./LagChart";
import { delayBands, lagSeries } from "./lagSeries";
import { operationMarks } from "./operationMarks";
import { seriesStyles } from "./seriesStyle";
import { RANGES, TimeRangePicker } from "./TimeRangePicker";

/** Every kind of operation: any of them can explain a change of lag (the API takes them all in one request). Keyed by
 * the API's enum of types (the OpenAPI schema's), so a type it adds or drops fails the typecheck until it is here. */
const EVERY_TYPE: Record<OperationType, true> = {
  switchover: true,
  failover: true,
  drill: true,
  repoint: true,
  bring_level: true,
  skip_transactions: true,
  start_replication: true,
  stop_replication: true,
  read_only: true,
  parallel_apply: true,
  rejoin: true,
  consistency_check: true,
  rebuild: true,
};
export const MARKED_TYPES = Object.keys(EVERY_TYPE) as OperationType[];

/** How often, at most, the connections' current lag (the live topology, which moves with every position event) is
 * carried into the charts: the history itself refreshes every 2 s when live. Re-drawn with each event instead, the
 * two charts kept a core half busy on a cluster under load. */
const LIVE_REDRAW_MS = 2000;

function toggled(list: readonly number[], value: number): number[] {
  return list.includes(value) ? list.filter((v) => v !== value) : [...list, value];
}

export function LagView({ clusterId }: { clusterId: number }) {
  const { choice, window, setRange, setCustom } = useTimeWindow(RANGES, "15m");
  const [liveChoice, setLive] = useLiveChoice();
  const live = liveChoice && "range" in window;
  const [domains, setDomains] = useUrlIntList("domains");
  const [replicas, setReplicas] = useUrlIntList("servers");
  const [hidden, setHidden] = useState<ReadonlySet<string>>(new Set());
  const operations = useOperationHistory(clusterId, MARKED_TYPES);
  const history = useLagHistory(clusterId, window, null, live);
  const servers = useServers(clusterId);
  const topology = useTopology(clusterId);

  // The servers' names only: the servers' list is read again with every second of position events, and a new map
  // each time would draw both charts again.
  const namesKey = JSON.stringify(servers.data?.map((s) => [s.id, s.name]) ?? []);
  const names = useMemo(() => new Map(JSON.parse(namesKey) as [number, string][]), [namesKey]);
  const untilMs = "range" in window ? (history.data ? Date.parse(history.data.until) : Date.now()) : window.untilMs;
  const sinceMs = "range" in window ? untilMs - LAG_RANGE_MS[window.range] : window.sinceMs;
  const edges = useThrottled(live ? topology.data?.edges : undefined, LIVE_REDRAW_MS);
  const all = useMemo(
    () => lagSeries(history.data?.samples ?? [], names, untilMs, edges ?? [], sinceMs, history.data?.at_start ?? []),
    [history.data, names, untilMs, edges, sinceMs],
  );
  const styles = useMemo(() => seriesStyles(all), [all]);
  const marks = useMemo(() => operationMarks(operations.data ?? [], sinceMs, untilMs), [operations.data, sinceMs, untilMs]);
  const seenDomains = [...new Set(all.map((s) => s.domain))].sort((a, b) => a - b);
  const seenReplicas = [...new Set(all.map((s) => s.replicaServerId))].sort((a, b) =>
    (names.get(a) ?? "").localeCompare(names.get(b) ?? ""),
  );
  const shown = useMemo(
    () =>
      all.filter(
        (s) => (domains.length === 0 || domains.includes(s.domain)) && (replicas.length === 0 || replicas.includes(s.replicaServerId)),
      ),
    [all, domains, replicas],
  );
  const onToggle = useCallback(
    (key: string) =>
      setHidden((current) => {
        const next = new Set(current);
        if (!next.delete(key)) next.add(key);
        return next;
      }),
    [],
  );
  const delays = useMemo(() => delayBands(history.data?.delays ?? [], shown), [history.data, shown]);
  const chartProps = { series: shown, styles, hidden, onToggle, marks, sinceMs, untilMs, onZoom: setCustom };

  return (
    <>
      <div className="toolbar">
        <TimeRangePicker choice={choice} window={window} onRange={setRange} onCustom={setCustom} />
        <fieldset>
          <legend>Domains</legend>
          {seenDomains.map((domain) => (
            <label key={domain}>
              <input type="checkbox" checked={domains.includes(domain)} onChange={() => setDomains(toggled(domains, domain))} />
              domain {domain}
            </label>
          ))}
          {seenDomains.length === 0 ? <span className="small muted">none yet</span> : null}
        </fieldset>
        <fieldset>
          <legend>Replicas</legend>
          {seenReplicas.map((id) => (
            <label key={id}>
              <input type="checkbox" checked={replicas.includes(id)} onChange={() => setReplicas(toggled(replicas, id))} />
              {names.get(id) ?? `server ${id}`}
            </label>
          ))}
          {seenReplicas.length === 0 ? <span className="small muted">none yet</span> : null}
        </fieldset>
        {"range" in window ? <LiveToggle live={live} onChange={setLive} /> : <span className="small muted">a fixed range: not live</span>}
      </div>
      <QueryState isPending={history.isPending} error={history.error} what="lag history">
        {history.data?.truncated ? (
          <p className="small">
            {history.data.bucket_s
              ? `Downsampled: one point per ${history.data.bucket_s} s per series (its last value; the newest is always shown); narrow the range for every sample.`
              : "Not every sample of this range is drawn; narrow the range for all."}
          </p>
        ) : null}
        {shown.length === 0 ? (
          <p className="muted">No lag samples in this range (samples are recorded when lag changes).</p>
        ) : null}
        {operations.error ? (
          <p className="error" role="alert">
            Operations cannot be marked on the charts: {operations.error.message}
          </p>
        ) : null}
        <LagChart title="Lag in seconds" metric="seconds" {...chartProps} delays={delays} />
        <LagChart title="Lag in transactions" metric="transactions" {...chartProps} />
      </QueryState>
    </>
  );
}

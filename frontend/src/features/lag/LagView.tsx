// The Lag tab: lag in seconds and in transactions per replica per domain over the last 5 min / 15 min / 1 h / 6 h /
// 24 h (live or paused) or a custom range; dragging across a chart zooms into a custom range. Range, live and
// domain filter in the URL (?range=1h&live=paused&domains=1, ?range=custom&from=…&to=…).
import { useMemo } from "react";
import { useLagHistory, useServers, useTopology } from "../../api/queries";
import { LAG_RANGE_MS } from "../../api/queryKeys";
import { LiveToggle, useLiveChoice } from "../../components/LiveToggle";
import { QueryState } from "../../components/QueryState";
import { useTimeWindow } from "../../lib/useTimeWindow";
import { useUrlIntList } from "../../lib/useUrlState";
import { LagChart } from "./LagChart";
import { lagSeries } from "./lagSeries";
import { RANGES, TimeRangePicker } from "./TimeRangePicker";

export function LagView({ clusterId }: { clusterId: number }) {
  const { choice, window, setRange, setCustom } = useTimeWindow(RANGES, "15m");
  const [liveChoice, setLive] = useLiveChoice();
  const live = liveChoice && "range" in window;
  const [domains, setDomains] = useUrlIntList("domains");
  const history = useLagHistory(clusterId, window, null, live);
  const servers = useServers(clusterId);
  const topology = useTopology(clusterId);

  const names = useMemo(() => new Map(servers.data?.map((s) => [s.id, s.name]) ?? []), [servers.data]);
  const untilMs = "range" in window ? (history.data ? Date.parse(history.data.until) : Date.now()) : window.untilMs;
  const sinceMs = "range" in window ? untilMs - LAG_RANGE_MS[window.range] : window.sinceMs;
  const edges = live ? topology.data?.edges : undefined;
  const all = useMemo(
    () => lagSeries(history.data?.samples ?? [], names, untilMs, edges ?? [], sinceMs, history.data?.at_start ?? []),
    [history.data, names, untilMs, edges, sinceMs],
  );
  const seenDomains = [...new Set(all.map((s) => s.domain))].sort((a, b) => a - b);
  const shown = domains.length === 0 ? all : all.filter((s) => domains.includes(s.domain));
  const toggle = (domain: number) =>
    setDomains(domains.includes(domain) ? domains.filter((d) => d !== domain) : [...domains, domain]);
  const chartProps = { series: shown, sinceMs, untilMs, onZoom: setCustom };

  return (
    <>
      <div className="toolbar">
        <TimeRangePicker choice={choice} window={window} onRange={setRange} onCustom={setCustom} />
        <fieldset>
          <legend>Domains</legend>
          {seenDomains.map((domain) => (
            <label key={domain}>
              <input type="checkbox" checked={domains.includes(domain)} onChange={() => toggle(domain)} />
              domain {domain}
            </label>
          ))}
          {seenDomains.length === 0 ? <span className="small muted">none yet</span> : null}
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
        <LagChart title="Lag in seconds" metric="seconds" {...chartProps} />
        <LagChart title="Lag in transactions" metric="transactions" {...chartProps} />
      </QueryState>
    </>
  );
}

// The Lag tab: lag in seconds and in transactions per replica per domain, over 5 min / 1 h / 24 h, live or
// paused; range, live and domain filter in the URL (?range=1h&live=paused&domains=1).
import { useMemo } from "react";
import { useLagHistory, useServers, useTopology } from "../../api/queries";
import { LAG_RANGE_MS, type LagRange } from "../../api/queryKeys";
import { LiveToggle, useLiveChoice } from "../../components/LiveToggle";
import { QueryState } from "../../components/QueryState";
import { useUrlChoice, useUrlIntList } from "../../lib/useUrlState";
import { LagChart } from "./LagChart";
import { lagSeries } from "./lagSeries";

const RANGES = ["5m", "1h", "24h"] as const satisfies readonly LagRange[];
const RANGE_LABEL: Record<LagRange, string> = { "5m": "5 min", "1h": "1 hour", "24h": "24 hours" };

export function LagView({ clusterId }: { clusterId: number }) {
  const [range, setRange] = useUrlChoice("range", RANGES, "5m");
  const [live, setLive] = useLiveChoice();
  const [domains, setDomains] = useUrlIntList("domains");
  const history = useLagHistory(clusterId, range, null, live);
  const servers = useServers(clusterId);
  const topology = useTopology(clusterId);

  const names = useMemo(() => new Map(servers.data?.map((s) => [s.id, s.name]) ?? []), [servers.data]);
  const untilMs = history.data ? Date.parse(history.data.until) : Date.now();
  const sinceMs = untilMs - LAG_RANGE_MS[range];
  const edges = live ? topology.data?.edges : undefined;
  const all = useMemo(
    () => lagSeries(history.data?.samples ?? [], names, untilMs, edges ?? [], sinceMs, history.data?.at_start ?? []),
    [history.data, names, untilMs, edges, sinceMs],
  );
  const seenDomains = [...new Set(all.map((s) => s.domain))].sort((a, b) => a - b);
  const shown = domains.length === 0 ? all : all.filter((s) => domains.includes(s.domain));
  const toggle = (domain: number) =>
    setDomains(domains.includes(domain) ? domains.filter((d) => d !== domain) : [...domains, domain]);

  return (
    <>
      <div className="toolbar">
        <fieldset>
          <legend>Range</legend>
          {RANGES.map((r) => (
            <label key={r}>
              <input type="radio" name="lag-range" value={r} checked={range === r} onChange={() => setRange(r)} />
              {RANGE_LABEL[r]}
            </label>
          ))}
        </fieldset>
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
        <LiveToggle live={live} onChange={setLive} />
      </div>
      <QueryState isPending={history.isPending} error={history.error} what="lag history">
        {history.data?.truncated ? (
          <p className="small">Only the first 10,000 samples of this range are drawn; narrow the range for all.</p>
        ) : null}
        {shown.length === 0 ? (
          <p className="muted">No lag samples in this range (samples are recorded when lag changes).</p>
        ) : null}
        <LagChart title="Lag in seconds" metric="seconds" series={shown} sinceMs={sinceMs} untilMs={untilMs} />
        <LagChart title="Lag in transactions" metric="transactions" series={shown} sinceMs={sinceMs} untilMs={untilMs} />
      </QueryState>
    </>
  );
}

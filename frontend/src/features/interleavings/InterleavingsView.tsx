// The Stream interleavings tab: each server's recent binlog as a lane; a domain filter and live/paused kept in
// the URL (?domains=1,2&live=paused&last=50); what is shown freezes while paused.
import { useEffect, useState } from "react";
import type { Schemas } from "../../api/client";
import { useInterleavings } from "../../api/queries";
import { LiveToggle, useLiveChoice } from "../../components/LiveToggle";
import { QueryState } from "../../components/QueryState";
import { useUrlChoice, useUrlIntList } from "../../lib/useUrlState";
import { alignLanes } from "./align";
import { domainColor } from "./domainColors";
import { Lanes } from "./Lanes";

const LIMITS = ["20", "50", "100", "200"] as const;

export function InterleavingsView({ clusterId }: { clusterId: number }) {
  const [domains, setDomains] = useUrlIntList("domains");
  const [live, setLive] = useLiveChoice();
  const [limit, setLimit] = useUrlChoice("last", LIMITS, "50");
  const query = useInterleavings(clusterId, Number(limit), null, live);
  const [frozen, setFrozen] = useState<Schemas["Interleavings"] | null>(null);
  const [highlighted, setHighlighted] = useState<string | null>(null);

  useEffect(() => {
    if (live) setFrozen(null);
    else if (!frozen && query.data) setFrozen(query.data);
  }, [live, frozen, query.data]);

  const shown = live ? query.data : (frozen ?? query.data);
  const alignment = alignLanes(shown?.servers ?? [], domains);
  const toggle = (domain: number) =>
    setDomains(domains.includes(domain) ? domains.filter((d) => d !== domain) : [...domains, domain]);

  return (
    <QueryState isPending={query.isPending} error={query.error} what="binlogs">
      <div className="toolbar">
        <fieldset>
          <legend>Domains</legend>
          {alignment.domains.map((domain) => (
            <label key={domain} className="domain-choice">
              <input type="checkbox" checked={domains.includes(domain)} onChange={() => toggle(domain)} />
              <span className="swatch" style={{ backgroundColor: domainColor(domain) }} aria-hidden="true" />
              domain {domain}
            </label>
          ))}
          <span className="small muted">{domains.length === 0 ? "none ticked: all shown" : `${domains.length} shown`}</span>
        </fieldset>
        <label>
          Transactions per server{" "}
          <select value={limit} onChange={(e) => setLimit(e.target.value as (typeof LIMITS)[number])}>
            {LIMITS.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <LiveToggle live={live} onChange={setLive} />
      </div>
      {alignment.lanes.length > 1 ? (
        <p className="small">
          {alignment.interleavingsDiffer
            ? "The servers interleave the domains differently; within each domain the order is the same."
            : "Every server shows the shared transactions in the same order."}
        </p>
      ) : null}
      <Lanes alignment={alignment} highlighted={highlighted} onHighlight={setHighlighted} />
    </QueryState>
  );
}

// The Stream interleavings tab: each server's recent binlog as a lane aligned by GTID, the master's commit groups
// outlined; a domain filter, live/paused and a picked GTID kept in the URL (?domains=1,2&live=paused&last=50&gtid=1-1-42);
// what is shown freezes while paused. The hovered GTID is kept by GTID across refreshes (hover.ts). Loading is
// bounded: no answer in time, or an error, is said with its reason and a Retry — over the last lanes shown, if any.
import { useEffect, useMemo, useReducer, useState } from "react";
import type { Schemas } from "../../api/client";
import { useInterleavings, useTopology } from "../../api/queries";
import { LiveToggle, useLiveChoice } from "../../components/LiveToggle";
import { ErrorMessage } from "../../components/QueryState";
import { useUrlChoice, useUrlIntList, useUrlString } from "../../lib/useUrlState";
import { alignLanes } from "./align";
import { GTID_PATTERN, commitGroupMarks } from "./commitGroups";
import { domainColor } from "./domainColors";
import { GtidPicker } from "./GtidPicker";
import { NO_HOVER, hoverReducer } from "./hover";
import { Lanes } from "./Lanes";

const LIMITS = ["20", "50", "100", "200"] as const;

export function InterleavingsView({ clusterId }: { clusterId: number }) {
  const [domains, setDomains] = useUrlIntList("domains");
  const [live, setLive] = useLiveChoice();
  const [limit, setLimit] = useUrlChoice("last", LIMITS, "50");
  const query = useInterleavings(clusterId, Number(limit), null, live);
  const topology = useTopology(clusterId);
  const [gtidParam, setPicked] = useUrlString("gtid");
  const picked = gtidParam && GTID_PATTERN.test(gtidParam) ? gtidParam : null;
  const [frozen, setFrozen] = useState<Schemas["Interleavings"] | null>(null);
  const [hover, onHover] = useReducer(hoverReducer, NO_HOVER);
  const [focused, setFocused] = useState<string | null>(null);
  const highlighted = hover.gtid ?? focused;

  useEffect(() => {
    if (live) setFrozen(null);
    else if (!frozen && query.data) setFrozen(query.data);
  }, [live, frozen, query.data]);

  const shown = live ? query.data : (frozen ?? query.data);
  // Recomputed when the answer or the filter changes, not on every hover: the lanes keep their scroll place meanwhile.
  const domainsKey = domains.join(",");
  const alignment = useMemo(() => alignLanes(shown?.servers ?? [], domainsKey ? domainsKey.split(",").map(Number) : []), [shown, domainsKey]);
  const masters = useMemo(
    () => topology.data?.nodes.filter((n) => n.role === "master").map((n) => n.server_id) ?? [],
    [topology.data],
  );
  const groups = commitGroupMarks(alignment.lanes, masters);
  const groupCount = new Set([...groups.values()].flat().flatMap((mark) => (mark ? [mark.id] : []))).size;
  const toggle = (domain: number) =>
    setDomains(domains.includes(domain) ? domains.filter((d) => d !== domain) : [...domains, domain]);

  const retry = (
    <button type="button" onClick={() => void query.refetch()} disabled={query.isFetching}>
      {query.isFetching ? "Retrying…" : "Retry"}
    </button>
  );
  if (!shown) {
    return query.error ? (
      <div className="inline-form">
        <ErrorMessage error={query.error} />
        {retry}
      </div>
    ) : (
      <p className="muted" role="status">
        Loading binlogs…
      </p>
    );
  }
  return (
    <>
      {query.error && live ? (
        <div className="inline-form" data-testid="refresh-error">
          <ErrorMessage error={query.error} />
          <span className="small muted">The lanes below are from the last answer.</span> {retry}
        </div>
      ) : null}
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
        <GtidPicker picked={picked} onPick={setPicked} />
        {/* Last in the toolbar: Tab goes from the live toggle straight to the lanes. */}
        <LiveToggle live={live} onChange={setLive} />
      </div>
      {alignment.lanes.length > 1 ? (
        <p className="small">
          {alignment.interleavingsDiffer
            ? "The servers interleave the domains differently; within each domain the order is the same."
            : "Every server shows the shared transactions in the same order."}
        </p>
      ) : null}
      <p className="small">
        {groupCount > 0
          ? `Outlined together: transactions the master committed in one group (${groupCount} groups shown).`
          : "No transactions committed in one group among those shown."}
      </p>
      <Lanes
        alignment={alignment}
        highlighted={highlighted}
        onHover={onHover}
        onFocusGtid={setFocused}
        groups={groups}
        picked={picked}
        onPick={setPicked}
      />
    </>
  );
}

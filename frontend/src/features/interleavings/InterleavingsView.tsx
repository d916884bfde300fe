// The Stream interleavings tab: each server's recent binlog as a lane, the master's commit groups outlined; a
// domain filter, live/paused and a picked GTID kept in the URL (?domains=1,2&live=paused&last=50&gtid=1-1-42);
// what is shown freezes while paused.
import { useEffect, useMemo, useState } from "react";
import type { Schemas } from "../../api/client";
import { useInterleavings, useTopology } from "../../api/queries";
import { LiveToggle, useLiveChoice } from "../../components/LiveToggle";
import { QueryState } from "../../components/QueryState";
import { useUrlChoice, useUrlIntList, useUrlString } from "../../lib/useUrlState";
import { alignLanes } from "./align";
import { GTID_PATTERN, commitGroupMarks } from "./commitGroups";
import { domainColor } from "./domainColors";
import { GtidPicker } from "./GtidPicker";
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
  const [highlighted, setHighlighted] = useState<string | null>(null);

  useEffect(() => {
    if (live) setFrozen(null);
    else if (!frozen && query.data) setFrozen(query.data);
  }, [live, frozen, query.data]);

  const shown = live ? query.data : (frozen ?? query.data);
  const alignment = alignLanes(shown?.servers ?? [], domains);
  const masters = useMemo(
    () => topology.data?.nodes.filter((n) => n.role === "master").map((n) => n.server_id) ?? [],
    [topology.data],
  );
  const groups = commitGroupMarks(alignment.lanes, masters);
  const groupCount = new Set([...groups.values()].flat().flatMap((mark) => (mark ? [mark.id] : []))).size;
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
        onHighlight={setHighlighted}
        groups={groups}
        picked={picked}
        onPick={setPicked}
      />
    </QueryState>
  );
}

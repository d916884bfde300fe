// The Stream interleavings tab: each server's binlog within a window as a lane aligned by GTID, the master's commit
// groups outlined; the window (the last N seconds, the newest N per server, or a GTID range), a domain filter,
// live/paused and a picked GTID kept in the URL (?window=30s&domains=1,2&live=paused&gtid=1-1-42, or
// ?window=gtid&from=1-1-100&to=1-1-200); what is shown freezes while paused, and while a transaction is pointed at or
// focused (said as "paused" until the pointer leaves it). The hovered GTID is kept by GTID across refreshes
// (hover.ts). Loading is bounded: no answer in time, or an error, is said with its reason and a Retry — over the last
// lanes shown, if any.
import { useEffect, useMemo, useReducer, useState } from "react";
import type { Schemas } from "../../api/client";
import { useInterleavings, useTopology } from "../../api/queries";
import { LiveToggle, useLiveChoice } from "../../components/LiveToggle";
import { ErrorMessage } from "../../components/QueryState";
import { useUrlChoice, useUrlIntList, useUrlString } from "../../lib/useUrlState";
import { useSearchParams } from "react-router-dom";
import { alignLanes } from "./align";
import { GTID_PATTERN, commitGroupMarks } from "./commitGroups";
import { domainColor } from "./domainColors";
import { GtidPicker } from "./GtidPicker";
import { NO_HOVER, hoverReducer } from "./hover";
import { Lanes } from "./Lanes";
import { DEFAULT_WINDOW, WINDOWS, describeWindow, windowQuery } from "./windowChoice";
import { WindowPicker } from "./WindowPicker";

export function InterleavingsView({ clusterId }: { clusterId: number }) {
  const [domains, setDomains] = useUrlIntList("domains");
  const [live, setLive] = useLiveChoice();
  const [windowKey, setWindowKey] = useUrlChoice("window", WINDOWS, DEFAULT_WINDOW);
  const [, setParams] = useSearchParams();
  const [from] = useUrlString("from");
  const [to] = useUrlString("to");
  const setRange = (nextFrom: string | null, nextTo: string | null) =>
    setParams(
      (current) => {
        const updated = new URLSearchParams(current);
        for (const [name, value] of [["from", nextFrom], ["to", nextTo]] as const) {
          if (value) updated.set(name, value);
          else updated.delete(name);
        }
        return updated;
      },
      { replace: true },
    );
  const windowParams = useMemo(() => windowQuery(windowKey, from, to), [windowKey, from, to]);
  const query = useInterleavings(clusterId, windowParams, null, live);
  const topology = useTopology(clusterId);
  const [gtidParam, setPicked] = useUrlString("gtid");
  const picked = gtidParam && GTID_PATTERN.test(gtidParam) ? gtidParam : null;
  // Paused: the answer for the window shown when it paused (another window chosen meanwhile is read once, then held).
  const windowKeyText = JSON.stringify(windowParams);
  const [frozenFor, setFrozen] = useState<{ key: string; data: Schemas["Interleavings"] } | null>(null);
  const frozen = frozenFor?.key === windowKeyText ? frozenFor.data : null;
  const [hover, onHover] = useReducer(hoverReducer, NO_HOVER);
  const [focused, setFocused] = useState<string | null>(null);
  const highlighted = hover.gtid ?? focused;

  useEffect(() => {
    if (live) setFrozen(null);
    else if (!frozen && query.data && !query.isPlaceholderData) setFrozen({ key: windowKeyText, data: query.data });
  }, [live, frozen, query.data, query.isPlaceholderData, windowKeyText]);

  // Held while a transaction is pointed at or focused: live refreshes do not move what is under the pointer.
  const holding = hover.gtid !== null ? "pointer" : focused !== null ? "focus" : null;
  const [held, setHeld] = useState<{ data: Schemas["Interleavings"]; at: number } | null>(null);
  useEffect(() => {
    if (!holding || !live) setHeld(null);
    else if (!held && query.data) setHeld({ data: query.data, at: query.dataUpdatedAt });
  }, [holding, live, held, query.data, query.dataUpdatedAt]);
  const newerWaiting = held !== null && query.dataUpdatedAt > held.at;

  const shown = live ? (held?.data ?? query.data) : (frozen ?? query.data);
  // Recomputed when the answer or the filter changes, not on every hover: the lanes keep their scroll place meanwhile.
  const domainsKey = domains.join(",");
  const alignment = useMemo(() => alignLanes(shown?.servers ?? [], domainsKey ? domainsKey.split(",").map(Number) : []), [shown, domainsKey]);
  const masters = useMemo(
    () => topology.data?.nodes.filter((n) => n.role === "master").map((n) => n.registered_server_id) ?? [],
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
  const picker = <WindowPicker choice={windowKey} onChoose={setWindowKey} from={from} to={to} onRange={setRange} />;
  if (!windowParams) {
    return (
      <div className="toolbar">
        {picker}
        <span className="small muted">Give the range's first GTID (From), its last (To), or both — one per domain.</span>
      </div>
    );
  }
  if (!shown) {
    return query.error ? (
      <div className="inline-form">
        {picker}
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
      {query.error ? (
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
        {picker}
        <GtidPicker picked={picked} onPick={setPicked} />
        {/* Last in the toolbar: Tab goes from the live toggle straight to the lanes. */}
        <LiveToggle live={live} onChange={setLive} />
      </div>
      <p className="small" data-testid="window">
        {shown.window ? describeWindow(shown.window) : null}{" "}
        {live && holding ? (
          <strong role="status" data-testid="hover-paused">
            ⏸ Paused while {holding === "pointer" ? "the pointer is on a transaction" : "a transaction has the keyboard focus"}
            {newerWaiting ? " — a newer answer is waiting" : ""}; live again when it leaves.
          </strong>
        ) : null}
      </p>
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

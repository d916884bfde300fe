// A master move's catch-up before the window, shown as it happens and afterwards: while a switchover (or drill)
// waits, its step's progress (transactions behind, per domain the master's commit rate against the candidate's apply
// rate, the predicted window against the budget, time waited against the bound); once it moved, the catch-up phase
// it went on with and each step of the window with its share; a dry run's forecast and advice. Step details and a
// drill run's details are untyped JSON, so they are read through the guards below.
import type { Schemas } from "../../api/client";
import { formatDuration, humanize } from "../../lib/format";

type CatchUpPhase = Schemas["CatchUpPhase"];
type DomainRate = Schemas["DomainRate"];

/** The catch-up step's name, as the operation's steps carry it. */
export const CATCH_UP_STEP = "catch_up_before_window";

/** The catch-up step's detail while it waits (prepare.py publishes it about twice a second). */
export interface CatchUpProgressDetail {
  span_s: number;
  behind: number;
  predicted_catch_up_s: number | null;
  domains: (DomainRate & { catch_up_s?: number | null; keeps_up?: boolean })[];
  waited_s: number;
  max_window_s: number;
  prepare_timeout_s: number;
  went_on?: string;
}

const isObject = (value: unknown): value is Record<string, unknown> => value != null && typeof value === "object";

export function isCatchUpProgress(detail: unknown): detail is CatchUpProgressDetail {
  return (
    isObject(detail) &&
    typeof detail.waited_s === "number" &&
    typeof detail.max_window_s === "number" &&
    typeof detail.prepare_timeout_s === "number" &&
    Array.isArray(detail.domains)
  );
}

function isCatchUpPhase(value: unknown): value is CatchUpPhase {
  return isObject(value) && typeof value.max_window_s === "number" && typeof value.behind === "number";
}

function isWindowSteps(value: unknown): value is Record<string, number> {
  return isObject(value) && Object.values(value).every((v) => typeof v === "number");
}

const txn = (n: number) => Math.round(n).toLocaleString("en-US");

/** The predicted window in words: "unbounded" for a candidate that applies nothing while it lacks something. */
export function predictedWindow(predicted: number | null | undefined, behind: number, measured = true): string {
  if (behind === 0) return "nothing left to apply";
  if (!measured) return "measuring…";
  return predicted == null ? "unbounded (it applies nothing)" : `~${formatDuration(predicted)}`;
}

function RatesTable({ rates, label }: { rates: (DomainRate & { keeps_up?: boolean })[]; label: string }) {
  if (rates.length === 0) return null;
  return (
    <table className="data compact" aria-label={label}>
      <thead>
        <tr>
          <th scope="col">Domain</th>
          <th scope="col">Master commits/s</th>
          <th scope="col">Candidate applies/s</th>
          <th scope="col">Behind</th>
        </tr>
      </thead>
      <tbody>
        {rates.map((r) => (
          <tr key={r.domain} className={r.keeps_up === false ? "error" : undefined}>
            <th scope="row">{r.domain}</th>
            <td>{txn(r.master_commits_per_s)}</td>
            <td>
              {txn(r.candidate_applies_per_s)}
              {r.keeps_up === false ? " (falls behind)" : ""}
            </td>
            <td>{txn(r.behind)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A budget or a bound as it was given: "2 s", "0.5 s". */
const given = (seconds: number) => `${seconds} s`;

/** The catch-up step's progress while it waits (and, once it went on, why). */
export function CatchUpProgress({ detail }: { detail: CatchUpProgressDetail }) {
  const window = predictedWindow(detail.predicted_catch_up_s, detail.behind, detail.span_s > 0);
  return (
    <div className="catch-up small" aria-label="Catch-up before the window">
      <p>
        {txn(detail.behind)} behind · predicted window {window} · budget {given(detail.max_window_s)} · waited{" "}
        {formatDuration(detail.waited_s)} of {given(detail.prepare_timeout_s)}
      </p>
      <RatesTable rates={detail.domains.filter((d) => d.behind > 0)} label="Rates per domain" />
      {detail.went_on ? <p>Went on: {detail.went_on}</p> : null}
    </div>
  );
}

/** A finished move's catch-up phase (`waited`: how long it waited), or a dry run's forecast (how long it measured). */
export function CatchUpPhaseView({ phase, title, waited }: { phase: CatchUpPhase; title: string; waited: string }) {
  return (
    <section aria-label={title} className="catch-up">
      <h4>{title}</h4>
      <p className="small">
        {phase.waited_s != null ? `${waited} ${formatDuration(phase.waited_s)} · ` : ""}
        {txn(phase.behind)} behind · predicted window {predictedWindow(phase.predicted_catch_up_s, phase.behind)} · budget{" "}
        {given(phase.max_window_s)}
      </p>
      <RatesTable rates={phase.rates ?? []} label={`${title}: rates per domain`} />
    </section>
  );
}

/** Each step of the window with its time and its share of the whole. */
export function WindowSteps({ steps, unavailable }: { steps: Record<string, number>; unavailable: number | null | undefined }) {
  const total = unavailable ?? Object.values(steps).reduce((a, b) => a + b, 0);
  return (
    <table className="data compact" aria-label="Window steps">
      <caption className="small">Writes unavailable for {formatDuration(total)}</caption>
      <thead>
        <tr>
          <th scope="col">Step</th>
          <th scope="col">Time</th>
          <th scope="col">Share</th>
        </tr>
      </thead>
      <tbody>
        {Object.entries(steps).map(([name, seconds]) => (
          <tr key={name}>
            <th scope="row">{humanize(name)}</th>
            <td>{formatDuration(seconds)}</td>
            <td>{total > 0 ? `${Math.round((100 * seconds) / total)}%` : "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

interface MoveFigures {
  catch_up_phase?: CatchUpPhase | null;
  window_steps?: Record<string, number> | null;
  unavailable_s?: number | null;
  forecast?: CatchUpPhase | null;
  advice?: string[] | null;
}

/** A switchover's (or drill's) catch-up phase and window; a dry run's forecast and advice. */
export function MoveReport({ figures }: { figures: MoveFigures | null | undefined }) {
  if (!figures) return null;
  return (
    <>
      {figures.catch_up_phase ? <CatchUpPhaseView phase={figures.catch_up_phase} title="Catch-up before the window" waited="Waited" /> : null}
      {figures.window_steps ? <WindowSteps steps={figures.window_steps} unavailable={figures.unavailable_s} /> : null}
      {figures.forecast ? <CatchUpPhaseView phase={figures.forecast} title="Forecast" waited="Measured over" /> : null}
      {figures.advice && figures.advice.length > 0 ? (
        <section aria-label="Advice">
          <h4>Advice</h4>
          <ul className="small">
            {figures.advice.map((sentence) => (
              <li key={sentence}>{sentence}</li>
            ))}
          </ul>
        </section>
      ) : null}
    </>
  );
}

/** A drill run's switch and switch back that recorded a catch-up phase or window steps (its details: untyped JSON). */
function switchParts(details: Record<string, unknown>) {
  return (["switchover", "switch_back"] as const)
    .map((key) => ({ key, figures: details[key] }))
    .filter((p): p is { key: "switchover" | "switch_back"; figures: Record<string, unknown> } => isObject(p.figures))
    .filter((p) => isCatchUpPhase(p.figures.catch_up_phase) || isWindowSteps(p.figures.window_steps));
}

export function hasSwitchReport(details: Record<string, unknown>): boolean {
  return switchParts(details).length > 0;
}

/** A drill run's switch (and switch back): each one's catch-up phase and window steps. */
export function DrillSwitchReport({ details }: { details: Record<string, unknown> }) {
  const shown = switchParts(details);
  if (shown.length === 0) return null;
  return (
    <>
      {shown.map(({ key, figures }) => (
        <section key={key} aria-label={key === "switchover" ? "Switch" : "Switch back"}>
          <h4>{key === "switchover" ? "Switch" : "Switch back"}</h4>
          <MoveReport
            figures={{
              catch_up_phase: isCatchUpPhase(figures.catch_up_phase) ? figures.catch_up_phase : null,
              window_steps: isWindowSteps(figures.window_steps) ? figures.window_steps : null,
              unavailable_s: typeof figures.unavailable_s === "number" ? figures.unavailable_s : null,
            }}
          />
        </section>
      ))}
    </>
  );
}

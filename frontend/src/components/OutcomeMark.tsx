// A pass/fail mark for a point on a time chart (a Recharts scatter shape): a green disc with a tick for a passed
// drill or a succeeded operation, a red disc with a cross for a failure, an amber diamond for anything else
// (undone, interrupted, still running). The shape says it as well as the colour; a <title> says it in words.
export type Outcome = "passed" | "failed" | "other";

export function outcomeOf(state: string): Outcome {
  if (state === "passed" || state === "succeeded") return "passed";
  if (state === "failed") return "failed";
  return "other";
}

export const OUTCOME_COLOR: Record<Outcome, string> = { passed: "#15803d", failed: "#b91c1c", other: "#b45309" };

interface MarkProps {
  cx?: number;
  cy?: number;
  payload?: { state: string; title: string };
}

const R = 7;

export function OutcomeMark({ cx, cy, payload }: MarkProps) {
  if (cx == null || cy == null || !payload) return null;
  const outcome = outcomeOf(payload.state);
  const color = OUTCOME_COLOR[outcome];
  return (
    <g className={`outcome-mark outcome-${outcome}`} data-state={payload.state} role="img" aria-label={payload.title}>
      <title>{payload.title}</title>
      {outcome === "other" ? (
        <path d={`M${cx},${cy - R} L${cx + R},${cy} L${cx},${cy + R} L${cx - R},${cy} Z`} fill={color} />
      ) : (
        <circle cx={cx} cy={cy} r={R} fill={color} />
      )}
      {outcome === "passed" ? (
        <path d={`M${cx - 3.5},${cy} L${cx - 1},${cy + 3} L${cx + 4},${cy - 3}`} stroke="white" strokeWidth={2} fill="none" />
      ) : null}
      {outcome === "failed" ? (
        <path d={`M${cx - 3},${cy - 3} L${cx + 3},${cy + 3} M${cx + 3},${cy - 3} L${cx - 3},${cy + 3}`} stroke="white" strokeWidth={2} />
      ) : null}
    </g>
  );
}

/** "3 passed, 1 failed" (the states counted as the marks show them). */
export function outcomeCounts(states: readonly string[], passedWord: string): string {
  const counts: Record<Outcome, number> = { passed: 0, failed: 0, other: 0 };
  for (const state of states) counts[outcomeOf(state)] += 1;
  const parts = [`${counts.passed} ${passedWord}`, `${counts.failed} failed`];
  if (counts.other > 0) parts.push(`${counts.other} other`);
  return parts.join(", ");
}

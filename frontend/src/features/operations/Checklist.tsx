// The dry run's preflight as a checklist: each check passed or failed in words and symbol, with its detail.
import { Badge } from "../../components/StatusBadge";
import { humanize } from "../../lib/format";
import type { CheckItem } from "./operationFacts";

export function Checklist({ checks }: { checks: CheckItem[] }) {
  if (checks.length === 0) return <p className="muted">The preflight reported no checks.</p>;
  return (
    <ul className="checklist" aria-label="Preflight checks">
      {checks.map((check, i) => (
        <li key={`${check.name}-${i}`} data-passed={check.passed === null ? "unknown" : String(check.passed)}>
          {check.passed === true ? (
            <Badge tone="ok" symbol="✓">passed</Badge>
          ) : check.passed === false ? (
            <Badge tone="bad" symbol="✕">failed</Badge>
          ) : (
            <Badge tone="muted" symbol="?">not run</Badge>
          )}{" "}
          <strong>{humanize(check.name)}</strong>
          {check.detail ? <span className="small"> — {check.detail}</span> : null}
        </li>
      ))}
    </ul>
  );
}

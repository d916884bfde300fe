// Small state labels that never rely on colour alone: each has a symbol and words, the colour only repeats them.
import type { Schemas } from "../api/client";
import type { LagLevel } from "../lib/format";

type Health = Schemas["HealthState"];

const HEALTH: Record<Health, { symbol: string; text: string; tone: Tone }> = {
  healthy: { symbol: "●", text: "healthy", tone: "ok" },
  failing: { symbol: "▲", text: "failing", tone: "warn" },
  unreachable: { symbol: "✕", text: "unreachable", tone: "bad" },
  unknown: { symbol: "?", text: "unknown", tone: "muted" },
};

export type Tone = "ok" | "warn" | "bad" | "muted" | "info";

export function Badge({ tone, symbol, children, title }: { tone: Tone; symbol?: string; children: string; title?: string }) {
  return (
    <span className={`badge badge-${tone}`} title={title}>
      {symbol ? <span aria-hidden="true">{symbol} </span> : null}
      {children}
    </span>
  );
}

export function HealthBadge({ health }: { health: Health | string }) {
  const known = HEALTH[health as Health] ?? HEALTH.unknown;
  return (
    <Badge tone={known.tone} symbol={known.symbol}>
      {known.text}
    </Badge>
  );
}

export function LagBadge({ level, children }: { level: LagLevel; children: string }) {
  const tone: Tone = level === "high" ? "bad" : level === "low" ? "warn" : "ok";
  const symbol = level === "high" ? "▲" : level === "low" ? "△" : "●";
  return (
    <Badge tone={tone} symbol={symbol} title={`lag ${level === "none" ? "none" : level}`}>
      {children}
    </Badge>
  );
}

export function healthTone(health: string): Tone {
  return HEALTH[health as Health]?.tone ?? "muted";
}

// A replication connection's own settings in words (pure functions): a compact line for the connections table
// ("delay 30 s · optimistic × 4 · filters 1") and the full list, one "name: value" per setting, for its details.
import type { Schemas } from "../../api/client";

type Settings = Schemas["LinkSettingsRead"];

function parallel(s: Settings): string | null {
  if (!s.parallel_mode && s.workers == null) return null;
  const mode = s.parallel_mode ?? "parallel";
  if (s.workers == null || s.workers === 0) return mode;
  const perDomain = s.domain_workers_max ? ` (${s.domain_workers_max}/domain)` : "";
  return `${mode} × ${s.workers}${perDomain}`;
}

/** The settings an operator looks for first, short; null when the replica reports none. */
export function settingsLine(settings: Settings | null | undefined): string | null {
  if (!settings) return null;
  const filters = Object.keys(settings.filters ?? {}).length;
  const parts = [
    settings.delay_s ? `delay ${settings.delay_s} s` : null,
    parallel(settings),
    settings.semi_sync_replica == null ? null : settings.semi_sync_replica ? "semi-sync" : "async",
    filters > 0 ? `${filters} filter${filters > 1 ? "s" : ""}` : null,
  ].filter((p): p is string => p !== null);
  return parts.length > 0 ? parts.join(" · ") : "defaults";
}

/** Every setting the replica reports, as [name, value] in words. */
export function settingsList(settings: Settings): [string, string][] {
  const unset = "server default";
  return [
    ["delay", settings.delay_s ? `${settings.delay_s} s (MASTER_DELAY)` : "none"],
    ["parallel mode", settings.parallel_mode ?? unset],
    ["workers", settings.workers != null ? String(settings.workers) : unset],
    ["workers per domain, at most", settings.domain_workers_max != null ? String(settings.domain_workers_max) : unset],
    ["semi-sync acknowledgement", settings.semi_sync_replica == null ? "always (no setting)" : settings.semi_sync_replica ? "on" : "off"],
    ["heartbeat", settings.heartbeat_ms != null ? `${settings.heartbeat_ms} ms` : unset],
    ["ignore duplicates", settings.ignore_duplicates ? "yes" : "no"],
    ...Object.entries(settings.filters ?? {}).map(([name, value]): [string, string] => [name, value]),
  ];
}

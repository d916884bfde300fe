// Query keys, one per endpoint, each holding its parameters; everything about a cluster starts with
// ["clusters", id] so one invalidation refreshes a cluster's page.
export type LagRange = "5m" | "15m" | "1h" | "6h" | "24h";
/** A window of time: the last `range` (sliding with the clock), or fixed instants (a custom range or a zoom). */
export type TimeWindow = { range: LagRange } | { sinceMs: number; untilMs: number };

export const queryKeys = {
  clustersOverview: () => ["clusters", "overview"] as const,
  cluster: (clusterId: number) => ["clusters", clusterId] as const,
  servers: (clusterId: number) => ["clusters", clusterId, "servers"] as const,
  topology: (clusterId: number) => ["clusters", clusterId, "topology"] as const,
  positions: (clusterId: number) => ["clusters", clusterId, "positions"] as const,
  proxies: (clusterId: number) => ["clusters", clusterId, "proxies"] as const,
  lagHistory: (clusterId: number, params: { window: TimeWindow; domain: number | null }) =>
    ["clusters", clusterId, "lag-history", params] as const,
  interleavings: (clusterId: number, params: { limit: number; domain: number | null }) =>
    ["clusters", clusterId, "interleavings", params] as const,
  operations: (clusterId: number, params: { limit: number }) => ["clusters", clusterId, "operations", params] as const,
  operationHistory: (clusterId: number, params: { types: readonly string[]; limit: number }) =>
    ["clusters", clusterId, "operations", "history", params] as const,
  operation: (clusterId: number, operationId: number) =>
    ["clusters", clusterId, "operation", operationId] as const,
  drillSchedules: (clusterId: number) => ["clusters", clusterId, "drills", "schedules"] as const,
  drillRuns: (clusterId: number, params: { limit: number }) => ["clusters", clusterId, "drills", "runs", params] as const,
  drillRun: (clusterId: number, runId: number) => ["clusters", clusterId, "drills", "run", runId] as const,
  collectorCycles: (params: { limit: number }) => ["collector", "cycles", params] as const,
  collectorFailedPolls: (params: { limit: number }) => ["collector", "failed-polls", params] as const,
  tokens: (params?: { state: string; search: string }) => (params ? (["tokens", params] as const) : (["tokens"] as const)),
  audit: (params: {
    clusterId: number | null;
    serverId: number | null;
    actor: string | null;
    action: string | null;
    outcome: string | null;
    since: string | null;
    until: string | null;
    limit: number;
  }) => ["audit", params] as const,
};

/** Milliseconds a range covers. */
export const LAG_RANGE_MS: Record<LagRange, number> = {
  "5m": 5 * 60_000,
  "15m": 15 * 60_000,
  "1h": 3_600_000,
  "6h": 6 * 3_600_000,
  "24h": 86_400_000,
};

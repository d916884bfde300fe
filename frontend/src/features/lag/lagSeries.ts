// Turns lag samples into chart series (a pure function): one series per replica, master and domain, points
// in time order, and, since samples are change-only (each holds until the next), the last value carried to the
// end of the range so a steady lag still draws a line. A series begins at the range's start with the value it had
// then (the API's `at_start`: the newest sample before the range); the connections' current lag (from the
// topology) ends it; a connection with no sample in the range had that lag throughout, so it is drawn flat.
import type { Schemas } from "../../api/client";

type Sample = Schemas["LagSampleRead"];

export interface LagPoint {
  t: number;
  seconds: number;
  transactions: number;
}

export interface LagSeries {
  key: string;
  label: string;
  /** The replication links its samples were on (a link removed and made again between the same servers is the
   * same series). */
  linkIds: number[];
  replicaServerId: number;
  domain: number;
  points: LagPoint[];
}

type Edge = Schemas["TopologyEdge"];

export function lagSeries(
  samples: readonly Sample[],
  names: ReadonlyMap<number, string>,
  untilMs: number,
  current: readonly Edge[] = [],
  sinceMs: number = untilMs,
  atStart: readonly Sample[] = [],
): LagSeries[] {
  const startSamples = atStart.map((sample) => ({ ...sample, sampled_at: new Date(sinceMs).toISOString() }));
  const byKey = new Map<string, LagSeries>();
  const currentSamples: Sample[] = current.flatMap((edge) =>
    Object.entries(edge.lag).map(([domain, lag]) => ({
      link_id: edge.link_id,
      replica_registered_server_id: edge.replica_registered_server_id,
      master_registered_server_id: edge.master_registered_server_id,
      connection: edge.connection,
      domain_id: Number(domain),
      transactions: lag.transactions,
      seconds: lag.seconds,
      sampled_at: new Date(untilMs).toISOString(),
    })),
  );
  for (const sample of [...startSamples, ...samples, ...currentSamples]) {
    // One series per replica, master (or connection) and domain: a link removed and made again between the same
    // servers (a master moved away and back) goes on as the same series.
    const key = `${sample.replica_registered_server_id}/${sample.master_registered_server_id ?? ""}/${sample.connection ?? ""}/${sample.domain_id}`;
    let series = byKey.get(key);
    if (!series) {
      const replica = names.get(sample.replica_registered_server_id) ?? `server ${sample.replica_registered_server_id}`;
      const master = sample.master_registered_server_id != null ? names.get(sample.master_registered_server_id) : null;
      const via = sample.connection ?? (master ? `from ${master}` : "");
      series = {
        key,
        label: `${replica}${via ? ` (${via})` : ""} · domain ${sample.domain_id}`,
        linkIds: [],
        replicaServerId: sample.replica_registered_server_id,
        domain: sample.domain_id,
        points: [],
      };
      byKey.set(key, series);
    }
    if (!series.linkIds.includes(sample.link_id)) series.linkIds.push(sample.link_id);
    series.points.push({ t: Date.parse(sample.sampled_at), seconds: sample.seconds, transactions: sample.transactions });
  }
  const all = [...byKey.values()];
  for (const series of all) {
    series.points.sort((a, b) => a.t - b.t);
    const last = series.points[series.points.length - 1];
    if (last && last.t < untilMs) series.points.push({ ...last, t: untilMs });
    const first = series.points[0];
    if (series.points.length === 1 && first && sinceMs < first.t) series.points.unshift({ ...first, t: sinceMs });
  }
  return all.sort((a, b) => a.label.localeCompare(b.label));
}

type Delay = Schemas["LinkDelayRead"];

/** A configured delay drawn on the seconds chart: lag up to it is by design. */
export interface DelayBand {
  key: string;
  delayS: number;
  /** "delay 30 s: node4 (main)" */
  label: string;
}

/** The configured delays (the lag history's `delays`) of the links some shown series is on, one band per delay. */
export function delayBands(delays: readonly Delay[], shown: readonly LagSeries[]): DelayBand[] {
  const bands = new Map<number, { delayS: number; names: string[] }>();
  for (const delay of delays) {
    const series = shown.find((s) => s.linkIds.includes(delay.link_id));
    if (series === undefined || delay.delay_s <= 0) continue;
    const band = bands.get(delay.delay_s) ?? { delayS: delay.delay_s, names: [] };
    const name = series.label.replace(/ · domain \d+$/, "");
    if (!band.names.includes(name)) band.names.push(name);
    bands.set(delay.delay_s, band);
  }
  return [...bands.values()]
    .sort((a, b) => a.delayS - b.delayS)
    .map((band) => ({ key: `delay-${band.delayS}`, delayS: band.delayS, label: `delay ${band.delayS} s: ${band.names.join(", ")}` }));
}

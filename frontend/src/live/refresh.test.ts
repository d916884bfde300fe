// Tests of refreshing what an event made stale: idle queries are fetched again at once, and a fetch under way is
// never cancelled — its query is kept for the next flush, and fetched again then.
import { QueryClient, QueryObserver } from "@tanstack/react-query";
import { describe, expect, it } from "vitest";
import { markStale, refreshIdle, type StaleQueries } from "./refresh";

/** A query with an observer (so it is active and refetched when invalidated) whose fetches are released by hand. */
function watched(client: QueryClient, queryKey: (string | number)[]) {
  const releases: ((value: number) => void)[] = [];
  let started = 0;
  const observer = new QueryObserver(client, {
    queryKey,
    queryFn: () => {
      started += 1;
      return new Promise<number>((resolve) => releases.push(resolve));
    },
    retry: false,
  });
  const unsubscribe = observer.subscribe(() => undefined);
  return {
    started: () => started,
    answer: (value: number) => releases.shift()!(value),
    data: () => client.getQueryData<number>(queryKey),
    unsubscribe,
  };
}

async function settled() {
  await new Promise((resolve) => setTimeout(resolve, 0));
}

describe("refreshIdle", () => {
  it("fetches idle queries again at once and keeps nothing", async () => {
    const client = new QueryClient();
    const topology = watched(client, ["clusters", 1, "topology"]);
    topology.answer(1);
    await settled();
    const stale = new Map<string, StaleQueries>();
    markStale(stale, ["clusters", 1, "topology"], false);
    expect(refreshIdle(client, stale)).toBe(false);
    expect(stale.size).toBe(0);
    expect(topology.started()).toBe(2);
    topology.unsubscribe();
  });

  it("lets a fetch under way answer, and fetches that query again at the next flush", async () => {
    const client = new QueryClient();
    const topology = watched(client, ["clusters", 1, "topology"]);
    const stale = new Map<string, StaleQueries>();
    markStale(stale, ["clusters", 1, "topology"], false);
    // The first fetch is still under way: it is not cancelled, and the query is kept.
    expect(refreshIdle(client, stale)).toBe(true);
    expect(topology.started()).toBe(1);
    topology.answer(7);
    await settled();
    expect(topology.data()).toBe(7);
    // Next flush: fetched again, as the event asked.
    expect(refreshIdle(client, stale)).toBe(false);
    expect(topology.started()).toBe(2);
    topology.answer(8);
    await settled();
    expect(topology.data()).toBe(8);
    topology.unsubscribe();
  });

  it("under a prefix, refreshes the idle queries now and keeps only the busy one", async () => {
    const client = new QueryClient();
    const servers = watched(client, ["clusters", 1, "servers"]);
    const consumers = watched(client, ["clusters", 1, "servers", 3, "consumers"]);
    servers.answer(1);
    await settled();
    const stale = new Map<string, StaleQueries>();
    markStale(stale, ["clusters", 1, "servers"], false);
    expect(refreshIdle(client, stale)).toBe(true);
    expect(servers.started()).toBe(2);
    expect(consumers.started()).toBe(1);
    expect([...stale.values()]).toEqual([{ queryKey: ["clusters", 1, "servers", 3, "consumers"], exact: true }]);
    servers.unsubscribe();
    consumers.unsubscribe();
  });

  it("counts a query marked twice once", () => {
    const stale = new Map<string, StaleQueries>();
    markStale(stale, ["clusters", 1, "positions"], false);
    markStale(stale, ["clusters", 1, "positions"], false);
    markStale(stale, ["clusters", 1], true);
    expect(stale.size).toBe(2);
  });
});

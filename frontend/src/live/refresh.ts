// Refreshes the queries a cluster's events made stale without ever cancelling a fetch under way. Events come several
// times a second while servers commit; a view's fetch that takes longer than the gap between two events (a busy API
// computing the topology) was cancelled by the next event's refresh and started again, so the view never received
// an answer and showed what it had before — an errant transaction taken back minutes ago, still named on the
// server's page — while every cancelled request kept the API busy. A query whose fetch is under way now keeps it and
// is refreshed again once that fetch is done (that fetch may have started before the event's change was stored).
import type { QueryClient, QueryKey } from "@tanstack/react-query";

/** What to refresh: every query under `queryKey` (one query alone when `exact`). */
export type StaleQueries = { queryKey: QueryKey; exact: boolean };

/** Adds to `stale` the queries under `queryKey` (that one alone when `exact`), once however often it is added. */
export function markStale(stale: Map<string, StaleQueries>, queryKey: QueryKey, exact: boolean): void {
  stale.set(`${exact ? "=" : "^"}${JSON.stringify(queryKey)}`, { queryKey, exact });
}

/** Refreshes the idle queries of each entry of `stale` and takes the entry out; a query whose fetch is under way is
 * left to it and put back into `stale` alone (by its own key), for the caller's next flush. Returns whether anything
 * is left. */
export function refreshIdle(queryClient: QueryClient, stale: Map<string, StaleQueries>): boolean {
  const pending = [...stale.values()];
  stale.clear();
  for (const filters of pending) {
    for (const query of queryClient.getQueryCache().findAll(filters)) {
      if (query.state.fetchStatus === "fetching") {
        markStale(stale, query.queryKey, true);
      } else {
        void queryClient.invalidateQueries({ queryKey: query.queryKey, exact: true }, { cancelRefetch: false });
      }
    }
  }
  return stale.size > 0;
}

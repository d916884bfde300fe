// The operations marked on the lag charts: real runs overlapping the range, clipped to it.
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { operationMarks } from "./operationMarks";

// A row of any type: the union's members differ only in their params and result, which these tests leave empty.
const op = (over: Partial<Schemas["OperationRead"]>): Schemas["OperationRead"] => ({
  id: 1,
  cluster_id: 1,
  type: "switchover",
  state: "succeeded",
  dry_run: false,
  params: {},
  steps: [],
  requester: "admin",
  idempotency_key: null,
  result: null,
  error: null,
  created_at: "2026-11-26T10:00:00Z",
  started_at: "2026-11-26T10:00:01Z",
  finished_at: "2026-11-26T10:00:05Z",
  ...over,
}) as Schemas["OperationRead"];
const at = (iso: string) => Date.parse(iso);
const SINCE = at("2026-11-26T09:00:00Z");
const UNTIL = at("2026-11-26T11:00:00Z");

describe("operationMarks", () => {
  it("marks a real operation from its start to its end, named by type and id", () => {
    expect(operationMarks([op({ id: 7, type: "skip_transactions" })], SINCE, UNTIL)).toEqual([
      { id: 7, label: "skip transactions #7", type: "skip_transactions", state: "succeeded", startMs: at("2026-11-26T10:00:01Z"), endMs: at("2026-11-26T10:00:05Z") },
    ]);
  });

  it("leaves out dry runs and operations outside the range", () => {
    const marks = operationMarks(
      [
        op({ id: 1, dry_run: true }),
        op({ id: 2, started_at: "2026-11-26T08:00:00Z", finished_at: "2026-11-26T08:00:09Z" }),
        op({ id: 3, type: "failover" }),
      ],
      SINCE,
      UNTIL,
    );
    expect(marks.map((m) => m.id)).toEqual([3]);
  });

  it("draws a running operation to the range's end and clips one begun before the range", () => {
    const [older, running] = operationMarks(
      [op({ id: 4, started_at: "2026-11-26T10:30:00Z", finished_at: null, state: "running" }), op({ id: 5, started_at: "2026-11-26T08:59:00Z" })],
      SINCE,
      UNTIL,
    );
    expect(older).toMatchObject({ id: 5, startMs: SINCE });
    expect(running).toMatchObject({ id: 4, endMs: UNTIL });
  });
});

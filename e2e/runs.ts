// Test data made through the API, not by clicking: a real switchover or drill on a cluster, started as the stack's
// admin, and the wait for an operation or a drill to reach its end (polled; each with a bound).
import { expect } from "@playwright/test";
import type { Schemas, TypedApi } from "./api";

/** Waits until operation `id` of cluster `cluster` has succeeded. */
export async function operationSucceeded(client: TypedApi, cluster: number, id: number, timeout: number): Promise<void> {
  await expect
    .poll(async () => (await client.get("/api/v1/clusters/{cluster_id}/operations/{operation_id}", { path: { cluster_id: cluster, operation_id: id } })).state, {
      timeout,
      message: `operation #${id} succeeded`,
    })
    .toBe("succeeded");
}

/** Starts a real switchover to the best replica and waits until it has succeeded; the operation. */
export async function switchover(client: TypedApi, cluster: number): Promise<Schemas["OperationRead"]> {
  const operation = await client.post("/api/v1/clusters/{cluster_id}/operations/switchover", {
    path: { cluster_id: cluster },
    data: { dry_run: false },
    status: 202,
  });
  await operationSucceeded(client, cluster, operation.id, 120_000);
  return operation;
}

/** Runs a drill (rotation, switch back) and waits until it has passed; the run. */
export async function drill(client: TypedApi, cluster: number): Promise<Schemas["DrillRunRead"]> {
  const run = await client.post("/api/v1/clusters/{cluster_id}/drills/runs", {
    path: { cluster_id: cluster },
    data: { candidate_strategy: "rotation", switch_back: true },
    status: 202,
  });
  await expect
    .poll(async () => (await client.get("/api/v1/clusters/{cluster_id}/drills/runs/{run_id}", { path: { cluster_id: cluster, run_id: run.id } })).state, {
      timeout: 150_000,
      message: `drill #${run.id} passed`,
    })
    .toBe("passed");
  return run;
}

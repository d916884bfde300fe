// The day after, from the UI, on the stack's ferryd cluster under its demo workload. A replica cut loose (its
// connection removed behind Ferry's back: read-only, replicating from nobody) is offered "Rejoin as a replica…" on its
// page: previewed, confirmed with the cluster's name, it replicates from the master again, and the consistency check
// Ferry starts after it finds it equal to its source. Then the operator rebuilds it from a donor: throttled, the
// progress bar shows the copy under way (bytes of the donor's estimate); cancelled, it ends `cancelled` with the
// server left stopped and marked; rebuilt again without a throttle, the bar full, it replicates, unmarked, and
// Ferry's check after it finds it equal.
import type { Locator } from "@playwright/test";
import { expect, masterName, test } from "../fixtures";
import { nodeAuth, type Stack } from "../stack";
import type { TypedApi } from "../api";

/** Waits for an operation to end; returns it. */
async function ended(client: TypedApi, stack: Stack, operationId: number) {
  let operation = await client.get("/api/v1/clusters/{cluster_id}/operations/{operation_id}", {
    path: { cluster_id: stack.cluster_id, operation_id: operationId },
  });
  await expect
    .poll(async () => {
      operation = await client.get("/api/v1/clusters/{cluster_id}/operations/{operation_id}", {
        path: { cluster_id: stack.cluster_id, operation_id: operationId },
      });
      return ["succeeded", "failed", "undone"].includes(operation.state);
    }, { message: `operation #${operationId} ended`, timeout: 120_000 })
    .toBe(true);
  return operation;
}

/** The id in "… operation #12." of a page line. */
async function operationIdIn(line: Locator) {
  return Number(/#(\d+)/.exec((await line.textContent()) ?? "")![1]);
}

test.use({ role: "operator" });

test("an operator rejoins a cut-loose replica and rebuilds it from a donor, watching the copy's progress", async ({ page, stack, api, client, serverPage }) => {
  const master = await masterName(api, stack);
  const topology = await client.get("/api/v1/clusters/{cluster_id}/topology", { path: { cluster_id: stack.cluster_id } });
  const replica = topology.nodes.find((n) => n.role === "replica")!;
  const node = stack.nodes.find((n) => n.name === replica.name)!;
  for (const path of ["/v1/replication/main/stop", "/v1/replication/main/reset"]) {
    const answer = await api.post(`${node.admin}${path}`, { ...nodeAuth(stack), data: path.endsWith("reset") ? { all: true } : {} });
    expect(answer.ok(), `${path}: ${await answer.text()}`).toBeTruthy();
  }
  await expect
    .poll(async () => {
      const now = await client.get("/api/v1/clusters/{cluster_id}/topology", { path: { cluster_id: stack.cluster_id } });
      return now.nodes.find((n) => n.registered_server_id === replica.registered_server_id)?.role;
    }, { message: `${replica.name} shown replicating from nobody` })
    .toBe("standalone");

  await serverPage.open(stack.cluster_id, replica.reported_server_id!);
  const article = serverPage.article(new RegExp(`^${replica.name}`));
  await article.root.getByRole("button", { name: "Rejoin as a replica…" }).click();
  const form = article.root.getByRole("group", { name: /^Rejoin .+ as a replica of the master$/ });
  await form.getByRole("button", { name: "Preview (dry run)" }).click();
  await expect(form.getByText(new RegExp(`It has nothing ${master}.* lacks: it can rejoin as its replica\\.`))).toBeVisible({ timeout: 60_000 });
  await form.getByLabel(/Type the cluster name/).fill(stack.cluster_name);
  await form.getByRole("button", { name: "Rejoin" }).click();
  await expect(form.getByText(new RegExp(`✓ It replicates from ${master}.* again, read-only, no longer fenced\\.`))).toBeVisible({ timeout: 90_000 });
  const checkLine = form.getByText(/Ferry checks it against its source, chunk by chunk: operation #\d+\./);
  await expect(checkLine).toBeVisible();
  const check = await ended(client, stack, await operationIdIn(checkLine));
  expect(check.type === "consistency_check" && check.state === "succeeded" && check.result?.consistent, JSON.stringify(check)).toBe(true);

  // Rebuild it from a donor, throttled: the progress bar shows it under way; cancelled, it stays stopped and marked.
  await page.reload();
  await article.root.getByRole("button", { name: "Rebuild from a donor…" }).click();
  let rebuild = article.root.getByRole("group", { name: /^Rebuild .+ from a donor$/ });
  // 20 bytes/s: the stack's few KB wait their turn for minutes, so the copy is caught under way.
  await rebuild.getByLabel("Throttle (MB/s)").fill("0.00002");
  await rebuild.getByRole("button", { name: "Preview (dry run)" }).click();
  await expect(rebuild.getByText(/can be rebuilt from .+\./)).toBeVisible({ timeout: 60_000 });
  await rebuild.getByLabel(/Type the cluster name/).fill(stack.cluster_name);
  await rebuild.getByRole("button", { name: "Rebuild", exact: true }).click();
  const live = article.root.getByLabel("Rebuild under way");
  await expect(live.getByLabel("Copied")).toBeVisible({ timeout: 60_000 });
  await expect(live.getByRole("status")).toContainText(/^Copying: \d+ bytes of about \d/, { timeout: 60_000 });
  const runId = await operationIdIn(article.root.getByText(/^Operation #\d+ \(rebuild\):/).first());
  await live.getByRole("button", { name: "Cancel the rebuild (the server stays stopped and marked)" }).click();
  // The worker running it sees the cancellation at its next pickup sweep (a second).
  const cancelled = await ended(client, stack, runId);
  expect([cancelled.state, cancelled.result?.failure?.kind, cancelled.result?.failure?.changed], JSON.stringify(cancelled.result)).toEqual(
    ["failed", "cancelled", true],
  );
  await expect(article.root.getByRole("region", { name: "Result" }).getByLabel("Copied")).toBeVisible();
  const marked = await client.get("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}", {
    path: { cluster_id: stack.cluster_id, registered_server_id: replica.registered_server_id },
  });
  expect(marked.fenced, "a cancelled rebuild leaves its server marked").toBe(true);

  // Rebuilt again without a throttle: it replicates, unmarked, and Ferry's check after it finds it equal.
  await page.reload();
  await article.root.getByRole("button", { name: "Rebuild from a donor…" }).click();
  rebuild = article.root.getByRole("group", { name: /^Rebuild .+ from a donor$/ });
  await rebuild.getByRole("button", { name: "Preview (dry run)" }).click();
  await expect(rebuild.getByText(/can be rebuilt from .+\./)).toBeVisible({ timeout: 60_000 });
  await rebuild.getByLabel(/Type the cluster name/).fill(stack.cluster_name);
  await rebuild.getByRole("button", { name: "Rebuild", exact: true }).click();
  await expect(rebuild.getByText(/✓ Rebuilt from .+ at .+; it replicates from .+, read-only, no longer marked\./)).toBeVisible({ timeout: 120_000 });
  await expect(rebuild.getByLabel("Copied")).toHaveAttribute("value", "100");
  const after = rebuild.getByText(/Ferry checks it against its source, chunk by chunk: operation #\d+\./);
  await expect(after).toBeVisible();
  const checked = await ended(client, stack, await operationIdIn(after));
  expect(checked.type === "consistency_check" && checked.state === "succeeded" && checked.result?.consistent, JSON.stringify(checked)).toBe(true);
});

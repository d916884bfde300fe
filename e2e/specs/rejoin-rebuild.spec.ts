// The day after, from the UI, on the stack's ferryd cluster under its demo workload. A replica cut loose (its
// connection removed behind Ferry's back: read-only, replicating from nobody) is offered "Rejoin as a replica…" on its
// page: previewed, confirmed with the cluster's name, it replicates from the master again, and the consistency check
// Ferry starts after it finds it equal to its source.
import { expect, masterName, test } from "../fixtures";
import { nodeAuth } from "../stack";

test.use({ role: "operator" });

test("an operator rejoins a cut-loose replica from its page, and Ferry's check finds it equal", async ({ page, stack, api, client, serverPage }) => {
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
  const checkId = Number(/#(\d+)/.exec((await checkLine.textContent()) ?? "")![1]);
  await expect
    .poll(async () => {
      const check = await client.get("/api/v1/clusters/{cluster_id}/operations/{operation_id}", {
        path: { cluster_id: stack.cluster_id, operation_id: checkId },
      });
      return check.state === "succeeded" && check.type === "consistency_check" ? check.result?.consistent : check.state;
    }, { message: `consistency check #${checkId} found ${replica.name} equal to its source`, timeout: 90_000 })
    .toBe(true);
});

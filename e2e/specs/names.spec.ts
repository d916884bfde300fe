// How the dashboard names a server: a preflight refusal shown in the switchover form names the candidate by its
// name and the server_id it reports ("node2 (server_id 2)"), never by the control plane's own id ("server 10").
import { expect, masterName, openClusterTab, test } from "../fixtures";

test.use({ role: "operator" });

test("identity in a preflight message: the refused candidate named by its name and its server_id", async ({ page, stack, api, client, switchoverForm: form }) => {
  const master = await masterName(api, stack);
  const topology = await client.get("/api/v1/clusters/{cluster_id}/topology", { path: { cluster_id: stack.cluster_id } });
  const candidate = topology.nodes.find((n) => n.name !== master && n.reported_server_id !== null)!;
  expect(candidate, "a replica whose server_id was read").toBeDefined();
  const set = (rule: "must_not" | "neutral") =>
    client.patch("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}", {
      path: { cluster_id: stack.cluster_id, registered_server_id: candidate.registered_server_id },
      data: { promotion_rule: rule },
    });

  await set("must_not"); // the preflight refuses it: never to be promoted
  try {
    await openClusterTab(page, stack, "operations");
    await form.candidate.selectOption(String(candidate.registered_server_id));
    await form.preview();

    const refusal = form.checks.filter({ hasText: /candidate eligible/i });
    await expect(refusal).toContainText(
      `${candidate.name} (server_id ${candidate.reported_server_id}) is never to be promoted (promotion rule must_not)`,
    );
    await expect(refusal).toHaveAttribute("data-passed", "false");
    // The control plane's id names no server in what the operator reads.
    await expect(form.form).not.toContainText(`server ${candidate.registered_server_id} `);
  } finally {
    await set("neutral");
  }
});

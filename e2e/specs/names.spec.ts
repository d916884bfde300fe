// How the dashboard names a server: a preflight refusal shown in the switchover form names the candidate by its
// name and the server_id it reports ("node2 (server_id 2)"), never by the control plane's own id ("server 10").
import { expect, masterName, openClusterTab, test } from "../fixtures";

interface Node {
  server_id: number;
  name: string;
  reported_server_id: number | null;
}

test("identity in a preflight message: the refused candidate named by its name and its server_id", async ({ page, signIn, stack, api }) => {
  const master = await masterName(api, stack);
  const topology = (await (await api.get(`/api/v1/clusters/${stack.cluster_id}/topology`)).json()) as { nodes: Node[] };
  const candidate = topology.nodes.find((n) => n.name !== master && n.reported_server_id !== null)!;
  expect(candidate, "a replica whose server_id was read").toBeDefined();
  const server = `/api/v1/clusters/${stack.cluster_id}/servers/${candidate.server_id}`;
  const set = async (rule: string) => expect((await api.patch(server, { data: { promotion_rule: rule } })).status()).toBe(200);

  await set("must_not"); // the preflight refuses it: never to be promoted
  try {
    await signIn("operator");
    await openClusterTab(page, stack, "operations");
    const form = page.getByRole("group", { name: "Switchover" });
    await form.getByRole("combobox", { name: /New master/ }).selectOption(String(candidate.server_id));
    await form.getByRole("button", { name: "Preview (dry run)" }).click();

    const checks = form.getByRole("list", { name: "Preflight checks" }).getByRole("listitem");
    const refusal = checks.filter({ hasText: /candidate eligible/i });
    await expect(refusal).toContainText(
      `${candidate.name} (server_id ${candidate.reported_server_id}) is never to be promoted (promotion rule must_not)`,
    );
    await expect(refusal).toHaveAttribute("data-passed", "false");
    // The control plane's id names no server in what the operator reads.
    await expect(form).not.toContainText(`server ${candidate.server_id} `);
  } finally {
    await set("neutral");
  }
});

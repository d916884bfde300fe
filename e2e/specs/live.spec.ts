// Live updates: a position reached on a node shows in the page without reloading it (the collector polls each
// node every second and the page follows the server-sent events). Each sample reads the master's position from
// the node itself, then times how long the page takes to show it or a later one; the figures are printed as one
// JSON line (the delay is measured here, not asserted: see docs/benchmarks.md).
import { expect, masterName, openClusterTab, test } from "../fixtures";
import { nodeAuth } from "../stack";

test.use({ role: "viewer" });

/** "1-1-10,2-1-7" → {1: 10, 2: 7}. */
function parsePosition(text: string): Map<number, number> {
  const seqs = new Map<number, number>();
  for (const gtid of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    const [domain, , seq] = gtid.split("-").map(Number);
    seqs.set(domain, seq);
  }
  return seqs;
}

/** Whether `shown` is at or past `reached` in every domain of `reached`. */
function atOrPast(shown: Map<number, number>, reached: Map<number, number>): boolean {
  return [...reached].every(([domain, seq]) => (shown.get(domain) ?? -1) >= seq);
}

test("a position change on a node shows in the page while it stays open", async ({ page, stack, api, topology }) => {
  await openClusterTab(page, stack, "topology");
  await expect(page.getByRole("status").filter({ hasText: "live (server-sent events)" })).toBeVisible();

  const master = await masterName(api, stack);
  const node = stack.nodes.find((n) => n.name === master)!;
  const cell = topology.server(master).getByRole("cell").last();
  const delays: number[] = [];
  for (let sample = 0; sample < 5; sample++) {
    const status = await (await api.get(`${node.admin}/v1/status`, nodeAuth(stack))).json();
    const reached = parsePosition(status.gtid_current_pos as string);
    expect(reached.size, "the workload has written").toBeGreaterThan(0);
    const started = Date.now();
    await expect.poll(async () => atOrPast(parsePosition((await cell.textContent()) ?? ""), reached), { timeout: 60_000, intervals: [50] }).toBe(true);
    delays.push(Date.now() - started);
  }
  delays.sort((a, b) => a - b);
  const figures = { metric: "position_to_page_ms", samples: delays.length, p50: delays[2], max: delays[4], delays };
  test.info().annotations.push({ type: "figures", description: JSON.stringify(figures) });
  console.log(JSON.stringify(figures));
});

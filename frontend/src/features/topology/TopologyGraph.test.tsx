// The topology graph's boxes: the server's name on a line of its own, its role and MariaDB server_id on the next
// (they never run together, as "127.0.0.1:3323INTERMEDIATE" did); each box is a link to the server's page by its
// server_id; on a frame too narrow for the graph (a phone) the servers are stacked instead, nothing cut off.
import { render, within } from "@testing-library/react";
import { MemoryRouter } from "react-router-dom";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TOPOLOGY } from "../../test/fixtures";
import { TopologyGraph } from "./TopologyGraph";

describe("TopologyGraph", () => {
  it("writes each server's name and its role on separate lines", () => {
    const topology = { ...TOPOLOGY, nodes: TOPOLOGY.nodes.map((n) => ({ ...n, name: `127.0.0.1:332${n.registered_server_id}`, reported_server_id: 10 + n.registered_server_id })) };
    const { container } = render(<MemoryRouter><TopologyGraph topology={topology} /></MemoryRouter>);
    const box = container.querySelector('[data-server="127.0.0.1:3322"]')!;
    const lines = [...box.querySelectorAll("text")].map((t) => ({ text: t.textContent, y: Number(t.getAttribute("y")) }));
    expect(lines[0]).toEqual({ text: "127.0.0.1:3322", y: 22 });
    expect(lines[1]!.text).toBe("REPLICA · server_id 12");
    expect(lines[1]!.y).toBeGreaterThan(lines[0]!.y);
    const link = box.querySelector("a")!;
    // Addressed by the server_id it reports (12), not the control plane's id (2).
    expect(link.getAttribute("href")).toBe(`/clusters/${TOPOLOGY.cluster_id}/servers/12`);
    expect(link.getAttribute("aria-label")).toBe("127.0.0.1:3322: open its page");
  });

  afterEach(() => vi.restoreAllMocks());

  it("stacks the servers on a screen too narrow for the graph (a phone), each with the connections it replicates over", () => {
    vi.spyOn(HTMLElement.prototype, "clientWidth", "get").mockReturnValue(350);
    const topology = { ...TOPOLOGY, nodes: TOPOLOGY.nodes.map((n) => ({ ...n, reported_server_id: 10 + n.registered_server_id })) };
    const { container, getByRole } = render(<MemoryRouter><TopologyGraph topology={topology} /></MemoryRouter>);
    expect(container.querySelector("svg")).toBeNull();
    const list = getByRole("list", { name: "Topology, stacked: 3 servers, 2 replication connections" });
    const cards = within(list).getAllByRole("listitem").filter((li) => li.parentElement === list);
    // The master first, then its replicas, one under another.
    expect(cards.map((c) => c.getAttribute("data-server"))).toEqual(["a", "b", "c"]);
    expect(within(cards[0]!).getByRole("link").getAttribute("href")).toBe(`/clusters/${TOPOLOGY.cluster_id}/servers/11`);
    expect(within(cards[0]!).queryByRole("list")).toBeNull();
    const links = within(cards[1]!).getByRole("list", { name: "b replicates from" });
    expect(within(links).getAllByRole("listitem").map((li) => li.textContent)).toEqual([expect.stringMatching(/^← a over /)]);
  });

  it("draws the graph when the frame is wide enough", () => {
    vi.spyOn(HTMLElement.prototype, "clientWidth", "get").mockReturnValue(1200);
    const { container } = render(<MemoryRouter><TopologyGraph topology={TOPOLOGY} /></MemoryRouter>);
    expect(container.querySelector("svg")).not.toBeNull();
    expect(container.querySelector(".topology-stacked")).toBeNull();
  });
});

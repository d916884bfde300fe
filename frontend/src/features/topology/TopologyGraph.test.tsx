// The topology graph's boxes: the server's name on a line of its own, its role and MariaDB server_id on the next
// (they never run together, as "127.0.0.1:3323INTERMEDIATE" did); each box is a link to the server's page by its server_id.
import { render } from "@testing-library/react";
import { MemoryRouter } from "react-router-dom";
import { describe, expect, it } from "vitest";
import { TOPOLOGY } from "../../test/fixtures";
import { TopologyGraph } from "./TopologyGraph";

describe("TopologyGraph", () => {
  it("writes each server's name and its role on separate lines", () => {
    const topology = { ...TOPOLOGY, nodes: TOPOLOGY.nodes.map((n) => ({ ...n, name: `127.0.0.1:332${n.server_id}`, reported_server_id: 10 + n.server_id })) };
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
});

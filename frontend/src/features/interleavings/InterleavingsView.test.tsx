// The interleavings view against a fake backend: a lane per server, hovering a transaction highlights its GTID
// in every lane, the domain filter keeps only the ticked domains and lives in the URL.
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useLocation } from "react-router-dom";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { TOPOLOGY } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { InterleavingsView } from "./InterleavingsView";

function events(serverId: number, name: string, oldestFirst: string[], commitIds?: number[]): Schemas["ServerEvents"] {
  return {
    server_id: serverId,
    name,
    error: null,
    transactions: oldestFirst
      .map((label, i) => {
        const [domain, seq] = label.split("-").map(Number) as [number, number];
        const commit_id = commitIds?.[i] ?? i;
        return { gtid: `${domain}-1-${seq}`, domain, origin_server_id: 1, seq_no: seq, commit_id, commit_ts_us: i, file: null, offset: null, tables: [], rows: 1 };
      })
      .reverse(),
  };
}

const INTERLEAVINGS: Schemas["Interleavings"] = {
  cluster_id: 1,
  servers: [events(1, "a", ["1-1", "2-1", "1-2", "2-2"]), events(2, "b", ["2-1", "1-1", "2-2", "1-2"])],
  union: [],
};

function Search() {
  return <output data-testid="search">{useLocation().search}</output>;
}

describe("InterleavingsView", () => {
  it("highlights one GTID in every lane and filters domains through the URL", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1/interleavings": () => ({ body: INTERLEAVINGS }),
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    });
    renderSignedIn(
      <>
        <InterleavingsView clusterId={1} />
        <Search />
      </>,
      { role: "viewer", url: "/clusters/1/interleavings" },
    );
    const laneA = await screen.findByRole("group", { name: "Binlog of a" });
    const laneB = screen.getByRole("group", { name: "Binlog of b" });
    expect(within(laneA).getAllByRole("listitem").map((li) => li.textContent)).toEqual(["1-1", "2-1", "1-2", "2-2"]);
    expect(within(laneB).getAllByRole("listitem").map((li) => li.textContent)).toEqual(["2-1", "1-1", "2-2", "1-2"]);
    expect(screen.getByText(/interleave the domains differently/)).toBeTruthy();

    fireEvent.mouseEnter(within(laneA).getByText("1-2"));
    const highlighted = document.querySelectorAll('[data-highlighted="true"]');
    expect([...highlighted].map((el) => el.getAttribute("data-gtid"))).toEqual(["1-1-2", "1-1-2"]);
    expect(screen.getByText("GTID 1-1-2: a #3, b #4")).toBeTruthy();
    fireEvent.mouseLeave(within(laneA).getByText("1-2"));
    expect(document.querySelectorAll('[data-highlighted="true"]')).toHaveLength(0);

    const user = userEvent.setup();
    within(laneA).getByText("1-1").focus();
    await user.keyboard("{ArrowRight}{ArrowRight}");
    expect(document.activeElement?.textContent).toBe("1-2");
    expect([...document.querySelectorAll('[data-highlighted="true"]')].map((el) => el.textContent)).toEqual(["1-2", "1-2"]);
    await user.keyboard("{End}");
    expect(document.activeElement?.getAttribute("data-gtid")).toBe("2-1-2");

    await user.click(screen.getByRole("checkbox", { name: /domain 2/ }));
    expect(screen.getByTestId("search").textContent).toBe("?domains=2");
    expect(within(laneB).getAllByRole("listitem").map((li) => li.textContent)).toEqual(["2-1", "2-2"]);
    expect(requests[0]!.query.get("limit")).toBe("50");
  });
});

describe("InterleavingsView: commit groups and a picked GTID", () => {
  // Master a (server 1 in the topology) committed 1-2 and 2-2 in one group; replica b holds them apart.
  const GROUPED: Schemas["Interleavings"] = {
    cluster_id: 1,
    servers: [
      events(1, "a", ["1-1", "2-1", "1-2", "2-2"], [1, 2, 3, 3]),
      events(2, "b", ["1-2", "1-1", "2-2", "2-1"], [7, 8, 9, 10]),
      events(3, "c", ["1-1"], [1]),
    ],
    union: [],
  };

  it("outlines the master's group in every lane, and finds a GTID typed or clicked on every server", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1/interleavings": () => ({ body: GROUPED }),
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    });
    renderSignedIn(
      <>
        <InterleavingsView clusterId={1} />
        <Search />
      </>,
      { role: "viewer", url: "/clusters/1/interleavings" },
    );
    const laneA = await screen.findByRole("group", { name: "Binlog of a" });
    const laneB = screen.getByRole("group", { name: "Binlog of b" });
    const laneC = screen.getByRole("group", { name: "Binlog of c" });
    expect(await screen.findByText(/committed in one group \(1 groups shown\)/)).toBeTruthy();
    const grouped = (lane: HTMLElement) =>
      [...lane.querySelectorAll("[data-group]")].map((el) => [el.textContent, el.getAttribute("data-group"), el.className.split(" ").at(-1)]);
    // Once the topology names a the master, its groups are marked in every lane.
    await waitFor(() => expect(grouped(laneB)).toEqual([["1-2", "1:3", "group-alone"], ["2-2", "1:3", "group-alone"]]));
    expect(grouped(laneA)).toEqual([["1-2", "1:3", "group-start"], ["2-2", "1:3", "group-end"]]);
    expect(grouped(laneC)).toEqual([]);
    expect(within(laneA).getByText("1-2").getAttribute("aria-label")).toContain("committed by the master in one group of 2");

    const user = userEvent.setup();
    const input = screen.getByRole("textbox", { name: "GTID" });
    await user.type(input, "1-x");
    expect(screen.getByRole("button", { name: "Find on every server" })).toHaveProperty("disabled", true);
    await user.clear(input);
    await user.type(input, "2-1-2{Enter}");
    expect(screen.getByTestId("search").textContent).toBe("?gtid=2-1-2");
    const place = (lane: HTMLElement) => within(lane).getByTestId("picked-place").textContent;
    expect([place(laneA), place(laneB), place(laneC)]).toEqual(["2-1-2: #4 of 4", "2-1-2: #3 of 4", "2-1-2: not here yet"]);
    expect([...document.querySelectorAll('[data-picked="true"]')].map((el) => el.closest("[data-lane]")!.getAttribute("data-lane"))).toEqual(["a", "b"]);

    await user.click(within(laneB).getByText("1-1"));
    expect(screen.getByTestId("search").textContent).toBe("?gtid=1-1-1");
    expect(input).toHaveProperty("value", "1-1-1");
    expect([place(laneA), place(laneB), place(laneC)]).toEqual(["1-1-1: #1 of 4", "1-1-1: #2 of 4", "1-1-1: #1 of 1"]);
    await user.click(screen.getByRole("button", { name: "Clear" }));
    expect(screen.getByTestId("search").textContent).toBe("");
    expect(screen.queryAllByTestId("picked-place")).toHaveLength(0);
    expect(requests.filter((r) => r.path.endsWith("/interleavings"))[0]!.query.get("limit")).toBe("50");
  });
});

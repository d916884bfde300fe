// The interleavings view against a fake backend: a lane per server, hovering a transaction highlights its GTID
// in every lane, the domain filter keeps only the ticked domains and lives in the URL.
import { fireEvent, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useLocation } from "react-router-dom";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { InterleavingsView } from "./InterleavingsView";

function events(serverId: number, name: string, oldestFirst: string[]): Schemas["ServerEvents"] {
  return {
    server_id: serverId,
    name,
    error: null,
    transactions: oldestFirst
      .map((label, i) => {
        const [domain, seq] = label.split("-").map(Number) as [number, number];
        return { gtid: `${domain}-1-${seq}`, domain, origin_server_id: 1, seq_no: seq, commit_id: i, commit_ts_us: i, file: null, offset: null, tables: [], rows: 1 };
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
    const { requests } = mockApi({ "GET /api/v1/clusters/1/interleavings": () => ({ body: INTERLEAVINGS }) });
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

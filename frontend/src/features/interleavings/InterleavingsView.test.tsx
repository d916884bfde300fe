// The interleavings view against a fake backend: a lane per server aligned by GTID, hovering a transaction highlights
// its GTID in every lane (and keeps it across a refresh), a lane without it says never or not yet, the domain filter
// keeps only the ticked domains and lives in the URL, an error says why and offers a retry.
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
    registered_server_id: serverId,
    name,
    error: null,
    position: {},
    never: [],
    truncated: false,
    transactions: oldestFirst
      .map((label, i) => {
        const [domain, seq] = label.split("-").map(Number) as [number, number];
        const commit_id = commitIds?.[i] ?? i;
        return { gtid: `${domain}-1-${seq}`, domain, origin_server_id: 1, seq_no: seq, commit_id, commit_ts_us: i, file: null, offset: null, tables: [], rows: 1 };
      })
      .reverse(),
  };
}

const WINDOW: Schemas["InterleavingWindow"] = { kind: "time", last_s: 10, limit: 1000, from_seq: { 1: 1 }, to_seq: null, domains: null, newest: { 1: 2, 2: 2 } };

const INTERLEAVINGS: Schemas["Interleavings"] = {
  cluster_id: 1,
  window: WINDOW,
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
    // b interleaves the other way: in a's columns, its blocks cross (each GTID in one column in both lanes).
    expect(within(laneB).getAllByRole("listitem").map((li) => li.textContent)).toEqual(["1-1", "2-1", "1-2", "2-2"]);
    const columns = (lane: HTMLElement) => within(lane).getAllByRole("listitem").map((li) => `${li.getAttribute("data-gtid")}@${li.style.gridColumn}`);
    expect(columns(laneB)).toEqual(columns(laneA));
    expect(within(laneB).getByText(/its binlog crosses the columns/)).toBeTruthy();
    expect(screen.getByText(/interleave the domains differently/)).toBeTruthy();

    fireEvent.mouseMove(within(laneA).getByText("1-2"), { clientX: 10, clientY: 10 });
    const highlighted = document.querySelectorAll('[data-highlighted="true"]');
    expect([...highlighted].map((el) => el.getAttribute("data-gtid"))).toEqual(["1-1-2", "1-1-2"]);
    expect(screen.getByText("GTID 1-1-2: a #3, b #4")).toBeTruthy();
    fireEvent.mouseLeave(screen.getByTestId("lanes"), { clientX: 10, clientY: 500 });
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
    expect(requests[0]!.query.get("last_s")).toBe("10");
  });
});

describe("InterleavingsView: hover, never and not yet, errors", () => {
  const FIRST: Schemas["Interleavings"] = {
    cluster_id: 1,
    window: WINDOW,
    servers: [
      events(1, "a", ["1-1", "2-1", "1-2", "2-2"]),
      events(2, "b", ["1-1", "2-1", "1-2"]),
      {
        ...events(3, "c", ["1-1"]),
        position: { 1: 1 },
        never: [{ domain: 2, origin_server_id: 1, reason: "domain 2 does not reach it: c's connection m filters it out (ignore_domain_ids)" }],
      },
    ],
    union: [],
  };
  const SECOND: Schemas["Interleavings"] = {
    ...FIRST,
    servers: [events(1, "a", ["1-1", "2-1", "1-2", "2-2", "1-3"]), events(2, "b", ["1-1", "2-1", "1-2", "2-2"]), FIRST.servers[2]!],
  };
  const highlightedGtids = () => [...document.querySelectorAll('[data-highlighted="true"]')].map((el) => el.getAttribute("data-gtid"));

  it("holds the lanes while a transaction is hovered, says so, and shows the newer answer once the pointer leaves", async () => {
    let calls = 0;
    mockApi({
      "GET /api/v1/clusters/1/interleavings": () => ({ body: calls++ === 0 ? FIRST : SECOND }),
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    });
    renderSignedIn(<InterleavingsView clusterId={1} />, { role: "viewer", url: "/clusters/1/interleavings" });
    const laneA = await screen.findByRole("group", { name: "Binlog of a" });
    const lanes = screen.getByTestId("lanes");
    expect(screen.queryByTestId("hover-paused")).toBeNull();
    fireEvent.mouseMove(within(laneA).getByText("2-1"), { clientX: 40, clientY: 12 });
    expect(highlightedGtids()).toEqual(["2-1-1", "2-1-1"]);
    expect(screen.getByTestId("hover-paused").textContent).toBe("⏸ Paused while the pointer is on a transaction; live again when it leaves.");
    // The live refresh (every 2 s) answers with 1-1-3: it waits, the lanes do not move under the pointer.
    await waitFor(() => expect(screen.getByTestId("hover-paused").textContent).toContain("a newer answer is waiting"), { timeout: 5000 });
    expect(within(laneA).queryByText("1-3")).toBeNull();
    expect(highlightedGtids()).toEqual(["2-1-1", "2-1-1"]);
    expect(screen.getByText("GTID 2-1-1: a #2, b #2, c never")).toBeTruthy();
    // Leaving the lanes: live again, with the newer answer.
    fireEvent.mouseLeave(lanes, { clientX: 900, clientY: 500 });
    expect(await within(laneA).findByText("1-3")).toBeTruthy();
    expect(screen.queryByTestId("hover-paused")).toBeNull();
    expect(highlightedGtids()).toEqual([]);
  }, 10_000);

  it("marks a lane short of the window's newest end with how many transactions it lacks, and one sharing nothing with the first as not comparable", async () => {
    const window = { ...WINDOW, newest: { 1: 2, 2: 2 } };
    const body: Schemas["Interleavings"] = {
      cluster_id: 1,
      window,
      servers: [
        events(1, "m1", ["1-1", "1-2"]),
        { ...events(2, "m2", ["2-1", "2-2"]), never: [{ domain: 1, origin_server_id: 1, reason: "not downstream of m1" }] },
        { ...events(4, "delayed", []), behind: { 1: 223, 2: 222 }, reached: { 1: 0, 2: 0 } },
      ],
      union: [],
    };
    mockApi({
      "GET /api/v1/clusters/1/interleavings": () => ({ body }),
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    });
    renderSignedIn(<InterleavingsView clusterId={1} />, { role: "viewer", url: "/clusters/1/interleavings?live=paused" });
    const delayed = await screen.findByRole("group", { name: "Binlog of delayed" });
    const mark = within(delayed).getByTestId("behind");
    expect(mark.textContent).toBe("445 transactions behind ←");
    expect(mark.getAttribute("title")).toBe("Behind the window's newest end by domain 1: 223, domain 2: 222 (seq_nos, from positions)");
    expect(within(delayed).getByText("445 behind the newest end (domain 1: 223, domain 2: 222)")).toBeTruthy();
    const m2 = screen.getByRole("group", { name: "Binlog of m2" });
    expect(within(m2).getByTestId("no-overlap").textContent).toBe("no overlap to compare with m1");
    expect(within(m2).queryByText(/same interleaving/)).toBeNull();
    expect(within(m2).queryByTestId("behind")).toBeNull();
    expect(screen.getByTestId("window").textContent).toContain("The last 10 s of writes: domain 1 seq 1–2, domain 2 from its first–2 (at most 1000 per server).");
  });

  it("asks for a GTID range as typed and shows the server's reason when it refuses it", async () => {
    const requests: URLSearchParams[] = [];
    mockApi({
      "GET /api/v1/clusters/1/interleavings": ({ query }) => {
        requests.push(query);
        return query.get("from") === "1-1-9"
          ? { status: 422, body: { error: { code: "bad_range", message: "domain 1: from seq_no 9 is after to seq_no 5" } } }
          : { body: FIRST };
      },
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    });
    const user = userEvent.setup();
    renderSignedIn(
      <>
        <InterleavingsView clusterId={1} />
        <Search />
      </>,
      { role: "viewer", url: "/clusters/1/interleavings?live=paused" },
    );
    await screen.findByRole("group", { name: "Binlog of a" });
    await user.selectOptions(screen.getByRole("combobox", { name: "Window" }), "gtid");
    expect(screen.getByTestId("search").textContent).toBe("?live=paused&window=gtid");
    const range = () => screen.getByRole("form", { name: "GTID range" });
    expect(screen.getByText(/Give the range's first GTID/)).toBeTruthy();
    await user.type(within(range()).getByRole("textbox", { name: "From" }), "1-1-2,2-1-1");
    await user.type(within(range()).getByRole("textbox", { name: "To" }), "1-1-4");
    await user.click(within(range()).getByRole("button", { name: "Show range" }));
    await waitFor(() => expect(requests.at(-1)?.get("from")).toBe("1-1-2,2-1-1"));
    expect(requests.at(-1)?.get("to")).toBe("1-1-4");
    expect(requests.at(-1)?.has("last_s")).toBe(false);
    expect(await screen.findByRole("group", { name: "Binlog of a" })).toBeTruthy();

    await user.clear(within(range()).getByRole("textbox", { name: "From" }));
    await user.type(within(range()).getByRole("textbox", { name: "From" }), "1-1-9");
    await user.clear(within(range()).getByRole("textbox", { name: "To" }));
    await user.type(within(range()).getByRole("textbox", { name: "To" }), "1-1-5");
    await user.click(within(range()).getByRole("button", { name: "Show range" }));
    expect(await screen.findByText(/domain 1: from seq_no 9 is after to seq_no 5/)).toBeTruthy();
  });

  it("in a lane without the hovered GTID, says in its column whether it will never come or not yet", async () => {
    mockApi({
      "GET /api/v1/clusters/1/interleavings": () => ({ body: FIRST }),
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    });
    renderSignedIn(<InterleavingsView clusterId={1} />, { role: "viewer", url: "/clusters/1/interleavings?live=paused" });
    const laneA = await screen.findByRole("group", { name: "Binlog of a" });
    const laneB = screen.getByRole("group", { name: "Binlog of b" });
    const laneC = screen.getByRole("group", { name: "Binlog of c" });
    const absent = (lane: HTMLElement) => lane.querySelector("[data-absent-for]");

    fireEvent.mouseMove(within(laneA).getByText("2-2"), { clientX: 70, clientY: 12 });
    expect(absent(laneC)!.getAttribute("data-absent")).toBe("never");
    expect(absent(laneC)!.textContent).toBe("never");
    expect(absent(laneC)!.getAttribute("title")).toContain("filters it out (ignore_domain_ids)");
    expect(absent(laneB)!.getAttribute("data-absent")).toBe("not-yet");
    expect(absent(laneB)!.getAttribute("style")).toContain(within(laneA).getByText("2-2").style.gridColumn);
    expect(screen.getByText("GTID 2-1-2: a #4, b not yet, c never")).toBeTruthy();

    fireEvent.mouseMove(within(laneA).getByText("1-2"), { clientX: 50, clientY: 12 });
    expect(absent(laneC)!.getAttribute("data-absent")).toBe("not-yet");
    expect(absent(laneC)!.getAttribute("title")).toBe("1-1-2: not here yet (at seq 1 of domain 1)");
    expect(absent(laneB)).toBeNull();
  });

  it("says why the binlogs could not be read and reads them again on Retry", async () => {
    let calls = 0;
    mockApi({
      "GET /api/v1/clusters/1/interleavings": () =>
        calls++ === 0 ? { status: 503, body: { error: { code: "unavailable", message: "the database is unavailable" } } } : { body: FIRST },
      "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    });
    renderSignedIn(<InterleavingsView clusterId={1} />, { role: "viewer", url: "/clusters/1/interleavings?live=paused" });
    expect((await screen.findByRole("alert")).textContent).toContain("the database is unavailable (HTTP 503, unavailable)");
    await userEvent.setup().click(screen.getByRole("button", { name: "Retry" }));
    expect(await screen.findByRole("group", { name: "Binlog of a" })).toBeTruthy();
    expect(screen.queryByRole("alert")).toBeNull();
  });
});

describe("InterleavingsView: commit groups and a picked GTID", () => {
  // Master a (server 1 in the topology) committed 1-2 and 2-2 in one group; replica b holds them apart.
  const GROUPED: Schemas["Interleavings"] = {
    cluster_id: 1,
    window: WINDOW,
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
    // b holds the group's members apart in its binlog, but in the shared columns they sit side by side.
    await waitFor(() => expect(grouped(laneB)).toEqual([["1-2", "1:3", "group-start"], ["2-2", "1:3", "group-end"]]));
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
    expect(requests.filter((r) => r.path.endsWith("/interleavings"))[0]!.query.get("last_s")).toBe("10");
  });
});

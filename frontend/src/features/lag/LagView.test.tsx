// The lag view against a fake backend: the range picker (15 min by default, 6 h, a custom range) and a zoom by
// dragging across a chart each change the URL and the exact window asked for; the legend hides and shows a
// series' line, the replica filter keeps one replica's series (in the URL), and the operations that really ran in
// the range are marked.
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useLocation } from "react-router-dom";
import { describe, expect, it, vi } from "vitest";
import type { Schemas } from "../../api/client";
import { operation, TOPOLOGY } from "../../test/fixtures";
import { mockApi, type RecordedRequest } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { LagView, MARKED_TYPES } from "./LagView";

const SERVERS = TOPOLOGY.nodes.map((n) => ({ id: n.registered_server_id, name: n.name }));

function history(request: RecordedRequest): Schemas["LagHistory"] {
  return {
    cluster_id: 1,
    since: request.query.get("since")!,
    until: request.query.get("until")!,
    truncated: false,
    at_start: [],
    samples: [
      { link_id: 10, replica_registered_server_id: 2, master_registered_server_id: 1, connection: "main", domain_id: 1, transactions: 4, seconds: 1.5, sampled_at: request.query.get("since")! },
    ],
  } as Schemas["LagHistory"];
}

function Search() {
  return <output data-testid="search">{decodeURIComponent(useLocation().search)}</output>;
}

const span = (r: RecordedRequest) => Date.parse(r.query.get("until")!) - Date.parse(r.query.get("since")!);

function setup(url: string) {
  const api = mockApi({
    "GET /api/v1/clusters/1/lag/history": (request) => ({ body: history(request) }),
    "GET /api/v1/clusters/1/servers": () => ({ body: SERVERS }),
    "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
  });
  renderSignedIn(
    <>
      <LagView clusterId={1} />
      <Search />
    </>,
    { role: "viewer", url },
  );
  const lagRequests = () => api.requests.filter((r) => r.path.endsWith("/lag/history"));
  return { lagRequests };
}

describe("LagView", () => {
  it("asks for the last 15 minutes, then for the range picked, kept in the URL", async () => {
    const { lagRequests } = setup("/clusters/1/lag");
    const figure = await screen.findByRole("figure", { name: "Lag in transactions" });
    await waitFor(() => expect(Number(figure.getAttribute("data-points"))).toBeGreaterThan(0));
    expect(span(lagRequests()[0]!)).toBe(15 * 60_000);
    expect(lagRequests()[0]!.query.get("limit")).toBe("10000");
    expect(screen.getByRole("radio", { name: "15 min" })).toHaveProperty("checked", true);

    await userEvent.setup().click(screen.getByRole("radio", { name: "6 hours" }));
    expect(screen.getByTestId("search").textContent).toBe("?range=6h");
    await waitFor(() => expect(span(lagRequests().at(-1)!)).toBe(6 * 3_600_000));
  });

  it("asks for exactly the custom range typed", async () => {
    const { lagRequests } = setup("/clusters/1/lag?range=1h");
    await screen.findByRole("figure", { name: "Lag in seconds" });
    expect(span(lagRequests()[0]!)).toBe(3_600_000);
    const user = userEvent.setup();
    await user.click(screen.getByRole("radio", { name: "custom" }));
    const form = screen.getByRole("form", { name: "Custom range" });
    fireEvent.change(screen.getByLabelText("From"), { target: { value: "2025-01-01T10:00:00" } });
    fireEvent.change(screen.getByLabelText("To"), { target: { value: "2025-01-01T09:00:00" } });
    expect(form.textContent).toContain("the start must be before the end");
    expect(screen.getByRole("button", { name: "Show" })).toHaveProperty("disabled", true);
    fireEvent.change(screen.getByLabelText("To"), { target: { value: "2025-01-01T12:30:00" } });
    await user.click(screen.getByRole("button", { name: "Show" }));

    const from = new Date("2025-01-01T10:00:00").toISOString();
    const to = new Date("2025-01-01T12:30:00").toISOString();
    expect(screen.getByTestId("search").textContent).toBe(`?range=custom&from=${from}&to=${to}`);
    await waitFor(() => expect(lagRequests().at(-1)!.query.get("since")).toBe(from));
    expect(lagRequests().at(-1)!.query.get("until")).toBe(to);
    expect(screen.getByText("a fixed range: not live")).toBeTruthy();
  });

  it("zooms into the instants dragged across", async () => {
    vi.spyOn(Element.prototype, "getBoundingClientRect").mockReturnValue({
      left: 0, width: 800, top: 0, height: 260, right: 800, bottom: 260, x: 0, y: 0, toJSON: () => ({}),
    } as DOMRect);
    const { lagRequests } = setup("/clusters/1/lag?range=custom&from=2025-01-01T00:00:00.000Z&to=2025-01-01T01:00:00.000Z");
    await screen.findByRole("figure", { name: "Lag in seconds" });
    expect(lagRequests()[0]!.query.get("since")).toBe("2025-01-01T00:00:00.000Z");

    const plot = screen.getByTestId("seconds-zoom");
    fireEvent.mouseDown(plot, { button: 0, clientX: 200 });
    fireEvent.mouseMove(plot, { clientX: 600 });
    expect(plot.querySelector(".zoom-band")).not.toBeNull();
    fireEvent.mouseUp(plot, { clientX: 600 });

    expect(screen.getByTestId("search").textContent).toBe("?range=custom&from=2025-01-01T00:15:00.000Z&to=2025-01-01T00:45:00.000Z");
    await waitFor(() => expect(lagRequests().at(-1)!.query.get("since")).toBe("2025-01-01T00:15:00.000Z"));
    expect(lagRequests().at(-1)!.query.get("until")).toBe("2025-01-01T00:45:00.000Z");
    // A click (no drag) zooms nothing.
    fireEvent.mouseDown(plot, { button: 0, clientX: 300 });
    fireEvent.mouseUp(plot, { clientX: 302 });
    expect(screen.getByTestId("search").textContent).toContain("from=2025-01-01T00:15:00.000Z");
  });
});

const RANGE = "range=custom&from=2025-01-01T00:00:00.000Z&to=2025-01-01T01:00:00.000Z";

/** Two replicas: b lags in domain 1, c in domains 1 and 2; one switchover ran in the range, one only as a dry run. */
function setupSeries(url: string, over: { operations?: () => { status?: number; body?: unknown }; delays?: unknown[] } = {}) {
  const sample = (link: number, replica: number, domain: number, at: string, seconds: number) => ({
    link_id: link, replica_registered_server_id: replica, master_registered_server_id: 1, connection: "main", domain_id: domain,
    transactions: seconds * 10, seconds, sampled_at: at,
  });
  const api = mockApi({
    "GET /api/v1/clusters/1/lag/history": (request) => ({
      body: {
        cluster_id: 1, since: request.query.get("since")!, until: request.query.get("until")!, truncated: false, at_start: [],
        delays: over.delays ?? [],
        samples: [
          sample(10, 2, 1, "2025-01-01T00:10:00Z", 1),
          sample(11, 3, 1, "2025-01-01T00:20:00Z", 2),
          sample(11, 3, 2, "2025-01-01T00:30:00Z", 3),
        ],
      },
    }),
    "GET /api/v1/clusters/1/servers": () => ({ body: SERVERS }),
    "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    "GET /api/v1/clusters/1/operations": over.operations ?? (() => ({
      body: [
        operation({ id: 5, type: "switchover", state: "succeeded", dry_run: false, started_at: "2025-01-01T00:40:00Z", finished_at: "2025-01-01T00:40:03Z" }),
        operation({ id: 6, type: "switchover", state: "succeeded", dry_run: true, started_at: "2025-01-01T00:45:00Z", finished_at: "2025-01-01T00:45:01Z" }),
      ],
    })),
  });
  renderSignedIn(
    <>
      <LagView clusterId={1} />
      <Search />
    </>,
    { role: "viewer", url },
  );
  return api;
}

const lines = (name: string) => Number(screen.getByRole("figure", { name }).getAttribute("data-lines"));

describe("LagView's legend, filters and marks", () => {
  it("hides a series' line in both charts when its legend entry is pressed, and shows it again", async () => {
    setupSeries(`/clusters/1/lag?${RANGE}`);
    const seconds = await screen.findByRole("figure", { name: "Lag in seconds" });
    await waitFor(() => expect(lines("Lag in seconds")).toBe(3));
    const entry = within(seconds).getByRole("button", { name: "c (main) · domain 2" });
    expect(entry.getAttribute("aria-pressed")).toBe("true");

    const user = userEvent.setup();
    await user.click(entry);
    expect(entry.getAttribute("aria-pressed")).toBe("false");
    expect(lines("Lag in seconds")).toBe(2);
    expect(lines("Lag in transactions")).toBe(2);
    expect(seconds.textContent).toContain("2 of 3 series shown");

    await user.click(entry);
    expect(lines("Lag in seconds")).toBe(3);
  });

  it("keeps the replicas ticked, in the URL", async () => {
    setupSeries(`/clusters/1/lag?${RANGE}`);
    await waitFor(() => expect(lines("Lag in seconds")).toBe(3));
    await userEvent.setup().click(screen.getByRole("checkbox", { name: "c" }));
    expect(screen.getByTestId("search").textContent).toContain("servers=3");
    const seconds = screen.getByRole("figure", { name: "Lag in seconds" });
    expect(within(seconds).getAllByRole("button").map((b) => b.textContent)).toEqual(["c (main) · domain 1", "c (main) · domain 2"]);
  });

  it("marks the operations that really ran in the range, asking for real runs only", async () => {
    const api = setupSeries(`/clusters/1/lag?${RANGE}`);
    const seconds = await screen.findByRole("figure", { name: "Lag in seconds" });
    await waitFor(() => expect(seconds.textContent).toContain("Marked: switchover #5 (succeeded)"));
    expect(seconds.textContent).not.toContain("#6");
    const asked = api.requests.find((r) => r.path.endsWith("/operations"))!;
    expect(asked.query.get("dry_run")).toBe("false");
    // Every operation type, in one request the API takes (it refused more than 8 types, so nothing was marked).
    expect(asked.query.getAll("type")).toEqual(MARKED_TYPES);
    expect(asked.query.getAll("type")).toHaveLength(13);
  });

  it("says so when the operations cannot be read, and still draws the lag", async () => {
    setupSeries(`/clusters/1/lag?${RANGE}`, {
      operations: () => ({ status: 422, body: { error: { code: "validation_error", message: "type: at most 8 items" } } }),
    });
    const alert = await screen.findByRole("alert", {}, { timeout: 10_000 });
    expect(alert.textContent).toMatch(/^Operations cannot be marked on the charts: .*at most 8 items/);
    await waitFor(() => expect(lines("Lag in seconds")).toBe(3));
  });

  it("draws a connection's configured delay as a band on the seconds chart only", async () => {
    setupSeries(`/clusters/1/lag?${RANGE}`, {
      delays: [{ link_id: 11, replica_registered_server_id: 3, master_registered_server_id: 1, connection: "main", delay_s: 30 }],
    });
    const seconds = await screen.findByRole("figure", { name: "Lag in seconds" });
    await waitFor(() => expect(seconds.textContent).toContain("Configured delay (lag up to it is by design): delay 30 s: c (main)"));
    expect(screen.getByRole("figure", { name: "Lag in transactions" }).textContent).not.toContain("Configured delay");
  });

  it("draws a series for the whole range from its samples, whatever its server is now (a replica since promoted)", async () => {
    const promoted = {
      ...TOPOLOGY,
      nodes: TOPOLOGY.nodes.map((n) => (n.registered_server_id === 2 ? { ...n, role: "master" as const } : n.registered_server_id === 1 ? { ...n, role: "replica" as const } : n)),
      edges: [],
    };
    mockApi({
      "GET /api/v1/clusters/1/lag/history": (request) => ({
        body: {
          cluster_id: 1, since: request.query.get("since")!, until: request.query.get("until")!, truncated: false, at_start: [], delays: [],
          samples: [{ link_id: 99, replica_registered_server_id: 2, master_registered_server_id: 1, connection: "main", domain_id: 1, transactions: 3, seconds: 0.5, sampled_at: "2025-01-01T00:10:00Z" }],
        },
      }),
      "GET /api/v1/clusters/1/servers": () => ({ body: SERVERS }),
      "GET /api/v1/clusters/1/topology": () => ({ body: promoted }),
      "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
    });
    renderSignedIn(<LagView clusterId={1} />, { role: "viewer", url: `/clusters/1/lag?${RANGE}` });
    const seconds = await screen.findByRole("figure", { name: "Lag in seconds" });
    await waitFor(() => expect(within(seconds).getAllByRole("button").map((b) => b.textContent)).toEqual(["b (main) · domain 1"]));
    expect(screen.getByRole("checkbox", { name: "b" })).toBeTruthy();
  });
});

// A server's change consumers on its server page, against a fake backend: each consumer with where it connected from,
// its domains, position and lag per domain, and those cut off; a kind without consumers says why; a server that does
// not answer says so.
import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { Consumers, lagWords } from "./Consumers";

const CONSUMER: Schemas["ConsumerRead"] = {
  name: "cache-invalidator", address: "10.0.0.9:51234", domains: [1, 2], start_position: "1-1-40",
  position: "1-1-97,2-1-12", connected_at: "2026-11-26T12:00:00Z", transactions_sent: 57,
  lag: { "2": { transactions: 0, seconds: 0 }, "1": { transactions: 3, seconds: 0.42 } },
};
const READ: Schemas["ServerConsumersRead"] = {
  registered_server_id: 1, label: "a (server_id 1)", kind: "ferry", supported: true,
  words: "1 change consumer(s) stream from a (server_id 1).", consumers: [CONSUMER],
  cut_off: [{ name: "indexer", address: "10.0.0.7:40022", position: "1-1-88", at: "2026-11-26T11:00:00Z",
              reason: "cut off: the consumer's connection took none of its stream" }],
  cut_off_total: 1, consumers_max: 64,
};

describe("change consumers", () => {
  it("writes each domain's lag in order with its units", () => {
    expect(lagWords(CONSUMER)).toBe("domain 1: 3 txn · 420 ms; domain 2: 0 txn · 0 s");
    expect(lagWords({ ...CONSUMER, lag: {} })).toBe("—");
  });

  it("lists the consumers with their position and lag, and those cut off", async () => {
    const { requests } = mockApi({ "GET /api/v1/clusters/1/servers/1/consumers": () => ({ body: READ }) });
    renderSignedIn(<Consumers clusterId={1} serverId={1} />, { role: "viewer" });
    const table = await screen.findByRole("table", { name: "Change consumers" });
    const row = within(table).getByRole("row", { name: /cache-invalidator/ });
    expect(within(row).getByText("10.0.0.9:51234")).toBeTruthy();
    expect(within(row).getByText("1, 2")).toBeTruthy();
    expect(within(row).getByText("1-1-97,2-1-12")).toBeTruthy();
    expect(within(row).getByText("domain 1: 3 txn · 420 ms; domain 2: 0 txn · 0 s")).toBeTruthy();
    expect(screen.getByText("1 change consumer(s) stream from a (server_id 1).")).toBeTruthy();
    const cut = screen.getByRole("region", { name: "Consumers cut off" });
    expect(within(cut).getByText(/Cut off for not reading \(1 since the server started\)/)).toBeTruthy();
    expect(within(cut).getByText(/indexer \(10\.0\.0\.7:40022\) at/).textContent).toContain("took none of its stream");
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /api/v1/clusters/1/servers/1/consumers"]);
  });

  it("says why a kind has none, and when the server does not answer", async () => {
    mockApi({
      "GET /api/v1/clusters/1/servers/2/consumers": () => ({
        body: { ...READ, registered_server_id: 2, kind: "mariadb", supported: false, consumers: [], cut_off: [], cut_off_total: 0,
                consumers_max: null, words: "b does not tell change consumers apart from its replicas: …" },
      }),
      "GET /api/v1/clusters/1/servers/3/consumers": () => ({
        status: 409, body: { error: { code: "server_unreachable", message: "c's change consumers cannot be read now: refused" } },
      }),
    });
    renderSignedIn(<Consumers clusterId={1} serverId={2} />, { role: "viewer" });
    expect(await screen.findByText("b does not tell change consumers apart from its replicas: …")).toBeTruthy();
    expect(screen.queryByRole("table")).toBeNull();
    renderSignedIn(<Consumers clusterId={1} serverId={3} />, { role: "viewer" });
    expect((await screen.findByText(/Change consumers could not be read/)).textContent).toContain("cannot be read now");
  });
});

// A server's settings on its page against a fake backend: an operator renames it and changes its admin port, promotion
// rule and labels (only those sent, exactly), bad ports and labels are said before anything is sent, and removing it
// needs its name typed, sends the DELETE and goes back to the cluster's topology; a viewer sees no settings.
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route, Routes } from "react-router-dom";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { serverChanges, serverForm } from "../../api/serverEdit";
import { TOPOLOGY } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { ServerView } from "./ServerView";

const SERVER = {
  id: 7, cluster_id: 1, name: "127.0.0.1:3323", label: "127.0.0.1:3323 (server_id 3)", kind: "mariadb", host: "127.0.0.1",
  protocol_port: 3323, admin_port: 3323, labels: { rack: "r1" }, maintenance: false, maintenance_detail: null,
  promotion_rule: "neutral", origin: "discovered", fenced: false, fenced_at: null, fence_reason: null, approved: true,
  approved_by: null, approved_at: null, health: "healthy", consecutive_failures: 0, last_seen_at: "2026-11-26T13:00:00Z",
  last_error: null, reported_server_id: 3, read_only: true, version: "10.11.6-MariaDB", gtid_binlog_pos: "", gtid_slave_pos: "",
  gtid_current_pos: "", created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-01T00:00:00Z",
} as Schemas["ServerRead"];

function backend() {
  return mockApi({
    "GET /api/v1/clusters/1/servers": () => ({ body: [SERVER] }),
    "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    "GET /api/v1/clusters/1/operations": () => ({ body: [] }),
    "GET /api/v1/audit": () => ({ body: [] }),
    "GET /api/v1/clusters/1/servers/7/consumers": () => ({ status: 409, body: { error: { code: "server_unreachable", message: "x" } } }),
    "PATCH /api/v1/clusters/1/servers/7": (req) => ({ body: { ...SERVER, ...(req.body as object) } }),
    "DELETE /api/v1/clusters/1/servers/7": () => ({ status: 204 }),
  });
}

function page() {
  return (
    <Routes>
      <Route path="/" element={<ServerView clusterId={1} serverRef="3" />} />
      <Route path="/clusters/1/topology" element={<p>the topology</p>} />
    </Routes>
  );
}

describe("ServerSettings", () => {
  it("sends only what changed, renaming the server", async () => {
    const { requests } = backend();
    const user = userEvent.setup();
    renderSignedIn(page(), { role: "operator" });
    await user.click(await screen.findByText("Server settings: edit, rename, remove"));
    const form = screen.getByRole("form", { name: "Edit the server" });
    const name = within(form).getByLabelText("Name");
    await user.clear(name);
    await user.type(name, "s3");
    const admin = within(form).getByLabelText("Admin port");
    await user.clear(admin);
    await user.type(admin, "3399");
    await user.selectOptions(within(form).getByLabelText("Promotion rule"), "must_not");
    const labels = within(form).getByLabelText("Labels");
    await user.clear(labels);
    await user.type(labels, "rack=r2, az=b");
    await user.click(within(form).getByRole("button", { name: "Save" }));
    const patch = requests.find((r) => r.method === "PATCH")!;
    expect(patch.path).toBe("/api/v1/clusters/1/servers/7");
    expect(patch.body).toEqual({ name: "s3", admin_port: 3399, promotion_rule: "must_not", labels: { rack: "r2", az: "b" } });
  });

  it("says what is wrong before sending anything", () => {
    const form = serverForm(SERVER);
    expect(serverChanges(SERVER, form)).toEqual({});
    expect(serverChanges(SERVER, { ...form, protocolPort: "70000" })).toBe("Protocol / SQL port: a port from 1 to 65535.");
    expect(serverChanges(SERVER, { ...form, adminPort: "" })).toBe("Admin port: it cannot be unset once known (give a port).");
    expect(serverChanges(SERVER, { ...form, labels: "rack" })).toBe('Label "rack": write it as key=value.');
    expect(serverChanges(SERVER, { ...form, name: "  " })).toBe("A server needs a name.");
    expect(serverChanges(SERVER, { ...form, labels: "" })).toEqual({ labels: {} });
  });

  it("removes the server once its name is typed, then shows the topology", async () => {
    const { requests } = backend();
    const user = userEvent.setup();
    renderSignedIn(page(), { role: "operator" });
    await user.click(await screen.findByText("Server settings: edit, rename, remove"));
    const form = screen.getByRole("form", { name: "Remove the server" });
    const remove = within(form).getByRole("button", { name: "Remove 127.0.0.1:3323" }) as HTMLButtonElement;
    expect(remove.disabled).toBe(true);
    await user.type(within(form).getByLabelText(/to confirm/), "127.0.0.1:3323");
    expect(remove.disabled).toBe(false);
    await user.click(remove);
    expect(await screen.findByText("the topology")).toBeTruthy();
    expect(requests.filter((r) => r.method === "DELETE").map((r) => r.path)).toEqual(["/api/v1/clusters/1/servers/7"]);
  });

  it("is not offered to a viewer", async () => {
    backend();
    renderSignedIn(page(), { role: "viewer" });
    expect(await screen.findByRole("article", { name: "127.0.0.1:3323 (server_id 3)" })).toBeTruthy();
    expect(screen.queryByText("Server settings: edit, rename, remove")).toBeNull();
  });
});

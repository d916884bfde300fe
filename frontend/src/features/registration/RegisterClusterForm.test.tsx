// Registering a MariaDB cluster through the form against a fake backend: the exact two requests (the cluster with
// its logins, then discovery from the seed on its SQL port), the passwords typed into password fields, cleared
// after sending and never shown back (only whether each login is stored), and a failed discovery said as such.
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { CLUSTER } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { TEST_TOKEN, renderSignedIn } from "../../test/render";
import { ClustersPage } from "../../pages/ClustersPage";
import { RegisterClusterForm } from "./RegisterClusterForm";

const DB_PASSWORD = "s3cret-db-Password";
const REPL_PASSWORD = "s3cret-repl-Password";

const REGISTERED: Schemas["ClusterRead"] = {
  ...CLUSTER, id: 7, name: "orders", admin_port_offset: 0, db_user_set: true, db_password_set: true,
  replication_user_set: true, replication_password_set: true, tls_ca_set: false, plaintext_transport: true,
};

const server = (id: number, name: string): Schemas["ServerRead"] => ({
  id, cluster_id: 7, name, label: `${name} (server_id ${id})`, kind: "mariadb", host: "10.0.0.5", protocol_port: 3306, admin_port: 3306, labels: {},
  maintenance: false, promotion_rule: "neutral", origin: "registered", fenced: false, fenced_at: null,
  fence_reason: null, approved: true, approved_by: null, approved_at: null, health: "unknown",
  consecutive_failures: 0, last_seen_at: null, last_error: null, reported_server_id: id, read_only: null,
  version: null, gtid_binlog_pos: null, gtid_slave_pos: null, gtid_current_pos: null,
  created_at: "2025-01-01T00:00:00Z", updated_at: "2025-01-01T00:00:00Z",
});

async function fillMariadb(user: ReturnType<typeof userEvent.setup>) {
  await user.type(screen.getByLabelText("Cluster name"), "orders");
  expect((screen.getByLabelText("Kind") as HTMLSelectElement).value).toBe("mariadb");
  await user.type(screen.getByLabelText("Host"), "10.0.0.5");
  await user.clear(screen.getByLabelText("SQL port"));
  await user.type(screen.getByLabelText("SQL port"), "3306");
  await user.type(screen.getByLabelText("Database user"), "ferry");
  await user.type(screen.getByLabelText("Database password"), DB_PASSWORD);
  await user.type(screen.getByLabelText("Replication user"), "ferry_repl");
  await user.type(screen.getByLabelText("Replication password"), REPL_PASSWORD);
}

describe("RegisterClusterForm", () => {
  it("sends the cluster with its logins, then discovery from the seed, and never shows a password back", async () => {
    const { requests } = mockApi({
      "POST /api/v1/clusters": () => ({ status: 201, body: REGISTERED }),
      "POST /api/v1/clusters/7/discovery": () => ({
        body: { seed: server(1, "db1"), added: [server(2, "db2"), server(3, "db3")], known: [], notes: [] },
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<RegisterClusterForm />, { role: "operator" });
    await fillMariadb(user);
    expect(screen.getByLabelText("Database password").getAttribute("type")).toBe("password");
    expect(screen.getByLabelText("Replication password").getAttribute("type")).toBe("password");
    await user.click(screen.getByRole("button", { name: "Register and discover" }));

    const outcome = await screen.findByRole("status", { name: "Registration outcome" });
    expect(outcome.textContent).toContain("Registered orders with 3 servers: db1, db2, db3.");
    expect(within(outcome).getByRole("link", { name: "orders" }).getAttribute("href")).toBe("/clusters/7/topology");
    expect(within(outcome).getByRole("list", { name: "Stored logins" }).textContent).toBe(
      "database user: storeddatabase password: storedreplication user: storedreplication password: storedCA certificate: not set",
    );
    expect(outcome.textContent).toContain("clear text");

    const posts = requests.filter((r) => r.method === "POST");
    expect(posts.map((r) => r.path)).toEqual(["/api/v1/clusters", "/api/v1/clusters/7/discovery"]);
    expect(posts[0]!.body).toEqual({
      name: "orders", description: "", auto_failover: false, auto_rejoin: false, enforce_read_only_replicas: true,
      catch_up_parallel_workers: 0,
      admin_port_offset: 0,
      db_user: "ferry",
      db_password: DB_PASSWORD, replication_user: "ferry_repl", replication_password: REPL_PASSWORD,
    });
    expect(posts[1]!.body).toEqual({ kind: "mariadb", host: "10.0.0.5", protocol_port: 3306, admin_port: 3306 });
    expect(posts[0]!.headers.get("Authorization")).toBe(`Bearer ${TEST_TOKEN}`);

    // Write-only: the password fields are empty again and neither password is anywhere on the page.
    expect((screen.getByLabelText("Database password") as HTMLInputElement).value).toBe("");
    expect((screen.getByLabelText("Replication password") as HTMLInputElement).value).toBe("");
    expect(document.body.innerHTML).not.toContain(DB_PASSWORD);
    expect(document.body.innerHTML).not.toContain(REPL_PASSWORD);
  });

  it("sends the CA when one is given, and says when discovery failed after the cluster was registered", async () => {
    const { requests } = mockApi({
      "POST /api/v1/clusters": () => ({ status: 201, body: { ...REGISTERED, tls_ca_set: true, plaintext_transport: false } }),
      "POST /api/v1/clusters/7/discovery": () => ({
        status: 422,
        body: { error: { code: "validation_error", message: "host: not allowed" } },
      }),
    });
    const user = userEvent.setup();
    renderSignedIn(<RegisterClusterForm />, { role: "operator" });
    await fillMariadb(user);
    await user.type(screen.getByLabelText("CA certificate (PEM, optional)"), "-----BEGIN CERTIFICATE-----");
    await user.click(screen.getByRole("button", { name: "Register and discover" }));

    const error = await screen.findByRole("alert");
    expect(error.textContent).toContain(
      "cluster orders was registered (id 7), but discovery from 10.0.0.5:3306 failed: host: not allowed",
    );
    expect((requests[0]!.body as { tls_ca: string }).tls_ca).toBe("-----BEGIN CERTIFICATE-----");
    expect(document.body.innerHTML).not.toContain(DB_PASSWORD);
  });

  it("is offered to operators on the clusters page, not to viewers", async () => {
    mockApi({ "GET /api/v1/clusters/overview": () => ({ body: [] }) });
    const viewer = renderSignedIn(<ClustersPage />, { role: "viewer" });
    await screen.findByText(/No clusters yet/);
    expect(screen.queryByText("Register a cluster")).toBeNull();
    viewer.unmount();

    renderSignedIn(<ClustersPage />, { role: "operator" });
    expect(await screen.findByText("Register a cluster")).toBeTruthy();
  });
});

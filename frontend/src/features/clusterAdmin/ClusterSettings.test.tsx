// A cluster's settings against a fake backend: an edit sends only what changed; deleting stays locked until the
// cluster's name is typed exactly, then sends DELETE and goes back to the overview; a refusal is shown in the API's
// words.
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route, Routes } from "react-router-dom";
import { describe, expect, it } from "vitest";
import { useCluster } from "../../api/queries";
import { CLUSTER } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { ClusterSettings } from "./ClusterSettings";

/** As the cluster page does: the settings of the cluster as last read. */
function Settings() {
  const cluster = useCluster(1);
  return cluster.data ? <ClusterSettings cluster={cluster.data} /> : null;
}

function renderAt() {
  return renderSignedIn(
    <Routes>
      <Route path="/clusters/1" element={<Settings />} />
      <Route path="/" element={<p>overview</p>} />
    </Routes>,
    { role: "operator", url: "/clusters/1" },
  );
}

describe("ClusterSettings", () => {
  it("sends only the fields that changed", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "PATCH /api/v1/clusters/1": (r) => ({ body: { ...CLUSTER, ...(r.body as object), updated_at: "2025-01-02T00:00:00Z" } }),
    });
    const user = userEvent.setup();
    renderAt();
    await user.click(await screen.findByText("Cluster settings"));
    expect((screen.getByRole("button", { name: "Save" }) as HTMLButtonElement).disabled).toBe(true);
    await user.type(screen.getByLabelText("Description"), "orders service");
    await user.click(screen.getByLabelText("Automatic failover"));
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(requests.filter((r) => r.method === "PATCH")).toHaveLength(1));
    expect(requests.find((r) => r.method === "PATCH")!.body).toEqual({ description: "orders service", auto_failover: true });
    expect((await screen.findByRole("status")).textContent).toContain("Saved.");
  });

  it("turns keeping replicas read-only off and sends that field alone", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "PATCH /api/v1/clusters/1": (r) => ({ body: { ...CLUSTER, ...(r.body as object) } }),
    });
    const user = userEvent.setup();
    renderAt();
    await user.click(await screen.findByText("Cluster settings"));
    const box = screen.getByLabelText("Keep replicas read-only") as HTMLInputElement;
    expect(box.checked).toBe(true);
    await user.click(box);
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(requests.filter((r) => r.method === "PATCH")).toHaveLength(1));
    expect(requests.find((r) => r.method === "PATCH")!.body).toEqual({ enforce_read_only_replicas: false });
  });

  it("deletes only once the name is typed, then goes to the overview", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "DELETE /api/v1/clusters/1": () => ({ status: 204 }),
    });
    const user = userEvent.setup();
    renderAt();
    await user.click(await screen.findByText("Cluster settings"));
    const button = screen.getByRole("button", { name: "Delete prod-eu" }) as HTMLButtonElement;
    await user.type(screen.getByLabelText(/to confirm/), "prod-e");
    expect(button.disabled).toBe(true);
    await user.type(screen.getByLabelText(/to confirm/), "u");
    expect(button.disabled).toBe(false);
    await user.click(button);
    expect(await screen.findByText("overview")).toBeTruthy();
    expect(requests.filter((r) => r.method === "DELETE").map((r) => r.path)).toEqual(["/api/v1/clusters/1"]);
  });

  it("shows the API's refusal", async () => {
    mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "DELETE /api/v1/clusters/1": () => ({
        status: 409,
        body: { error: { code: "operation_running", message: "operation 7 is running on cluster prod-eu" } },
      }),
    });
    const user = userEvent.setup();
    renderAt();
    await user.click(await screen.findByText("Cluster settings"));
    await user.type(screen.getByLabelText(/to confirm/), "prod-eu");
    await user.click(screen.getByRole("button", { name: "Delete prod-eu" }));
    expect((await screen.findByRole("alert")).textContent).toContain("operation 7 is running");
  });
});

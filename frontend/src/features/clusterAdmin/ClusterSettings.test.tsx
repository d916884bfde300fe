// A cluster's settings against a fake backend: an edit sends only what changed (the max window, null to put the
// default back, and the catch-up parallel workers among them; out-of-bounds values are held back); deleting stays locked until the
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

  it("sets the max window and the catch-up parallel workers, sending those fields alone", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "PATCH /api/v1/clusters/1": (r) => ({ body: { ...CLUSTER, ...(r.body as object) } }),
    });
    const user = userEvent.setup();
    renderAt();
    await user.click(await screen.findByText("Cluster settings"));
    const window = screen.getByLabelText("Max window (s)") as HTMLInputElement;
    expect(window.value).toBe("");
    expect(window.placeholder).toBe("default");
    await user.type(window, "30");
    const workers = screen.getByLabelText("Catch-up parallel workers") as HTMLInputElement;
    expect(workers.value).toBe("0");
    await user.clear(workers);
    await user.type(workers, "8");
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(requests.filter((r) => r.method === "PATCH")).toHaveLength(1));
    expect(requests.find((r) => r.method === "PATCH")!.body).toEqual({ max_window_s: 30, catch_up_parallel_workers: 8 });
  }, 30_000); // a bound for a loaded machine, not an expectation

  it("puts the control plane's max window back with an empty field (null)", async () => {
    const { requests } = mockApi({
      "GET /api/v1/clusters/1": () => ({ body: { ...CLUSTER, max_window_s: 30 } }),
      "PATCH /api/v1/clusters/1": (r) => ({ body: { ...CLUSTER, ...(r.body as object) } }),
    });
    const user = userEvent.setup();
    renderAt();
    await user.click(await screen.findByText("Cluster settings"));
    const window = screen.getByLabelText("Max window (s)") as HTMLInputElement;
    expect(window.value).toBe("30");
    await user.clear(window);
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(requests.filter((r) => r.method === "PATCH")).toHaveLength(1));
    expect(requests.find((r) => r.method === "PATCH")!.body).toEqual({ max_window_s: null });
  }, 30_000); // a bound for a loaded machine, not an expectation

  it("refuses a max window or a worker count out of bounds before sending anything", async () => {
    const { requests } = mockApi({ "GET /api/v1/clusters/1": () => ({ body: CLUSTER }) });
    const user = userEvent.setup();
    renderAt();
    await user.click(await screen.findByText("Cluster settings"));
    const save = screen.getByRole("button", { name: "Save" }) as HTMLButtonElement;
    const window = screen.getByLabelText("Max window (s)");
    for (const bad of ["0", "3601"]) {
      await user.clear(window);
      await user.type(window, bad);
      expect(screen.getByRole("alert").textContent).toBe(
        "The max window is more than 0 and at most 3600 seconds (empty: the control plane's default).",
      );
      expect(save.disabled).toBe(true);
    }
    await user.clear(window);
    const workers = screen.getByLabelText("Catch-up parallel workers");
    for (const bad of ["257", "1.5"]) {
      await user.clear(workers);
      await user.type(workers, bad);
      expect(screen.getByRole("alert").textContent).toBe("Catch-up parallel workers: a whole number from 0 to 256.");
      expect(save.disabled).toBe(true);
    }
    await user.click(save);
    expect(requests.filter((r) => r.method === "PATCH")).toEqual([]);
  }, 30_000); // a bound for a loaded machine, not an expectation

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

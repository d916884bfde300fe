// Role gating on the Operations tab: a viewer sees the history but no control that changes state; an operator
// sees the guarded actions.
import { screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { CLUSTER, TOPOLOGY, operation } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { OperationsView } from "./OperationsView";

function backend() {
  return mockApi({
    "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    "GET /api/v1/clusters/1/operations": () => ({ body: [operation({ id: 9, state: "succeeded", dry_run: false })] }),
  });
}

describe("operations by role", () => {
  it("shows a viewer the history and no state-changing control", async () => {
    backend();
    renderSignedIn(<OperationsView clusterId={1} clusterName={CLUSTER.name} />, { role: "viewer" });
    expect(await screen.findByRole("table", { name: "Operation history" })).toBeTruthy();
    expect(await screen.findByText(/role \(viewer\) may read but not start operations/)).toBeTruthy();
    expect(screen.queryByRole("group", { name: "Switchover" })).toBeNull();
    expect(screen.queryByRole("button", { name: /preview|switch over|fail over|repoint|read-only|replication|level/i })).toBeNull();
    expect(screen.queryByRole("combobox")).toBeNull();
  });

  it("shows an operator the guarded actions", async () => {
    backend();
    renderSignedIn(<OperationsView clusterId={1} clusterName={CLUSTER.name} />, { role: "operator" });
    expect(await screen.findByRole("group", { name: "Switchover" })).toBeTruthy();
    expect(screen.getAllByRole("button", { name: "Preview (dry run)" }).length).toBeGreaterThanOrEqual(6);
  });
});

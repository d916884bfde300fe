// A replica's parallel apply on its server page, against a fake backend: the mode and workers per connection, the
// rates per domain with the verdict; the change form refuses values the server's kind refuses before anything is
// sent, says when the workers are one pool for the whole server, and its dry run sends the exact request.
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { CLUSTER, operation } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { ParallelApply, refusal } from "./ParallelApply";

const LIMITS: Schemas["ParallelApplyLimitsRead"] = {
  modes: ["none", "minimal", "conservative", "optimistic", "aggressive"],
  parallel_modes: ["conservative", "optimistic", "aggressive"],
  workers_min: 0, workers_max: 16383, domain_workers_min: 0, server_wide_workers: true,
};
const READ: Schemas["ParallelApplyRead"] = {
  registered_server_id: 2, label: "s2 (server_id 2)", kind: "mariadb", limits: LIMITS, measured_over_s: 1,
  connections: [{
    name: "", master_address: "127.0.0.1:3306", master_registered_server_id: 1, running: true, sql_state: "applying",
    settings: { mode: "optimistic", workers: 0, domain_workers_max: 0 },
    domains: [{ domain: 1, master_commit_rate: 2310, apply_rate: 1480, behind: 5400, verdict: "falls_behind",
                falls_behind_by: 830, words: "falls behind by 830 txn/s (5,400 transactions behind)" }],
    verdict: "falls_behind", words: "falls behind by 830 txn/s (domain 1)",
  }],
};

describe("parallel apply", () => {
  it("refuses what the kind refuses", () => {
    expect(refusal(LIMITS, "serial", 4, 4)).toMatch(/mode serial is not one of none/);
    expect(refusal(LIMITS, "optimistic", 4, 5)).toMatch(/per domain must be 0 to workers \(4\)/);
    expect(refusal(LIMITS, "optimistic", 16384, 0)).toMatch(/workers must be 0 to 16383/);
    expect(refusal(LIMITS, "optimistic", 8, 0)).toBeNull();
  });

  it("shows the rates and previews a change with the exact request", async () => {
    const requests: unknown[] = [];
    mockApi({
      "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
      "GET /api/v1/clusters/1/servers/2/parallel-apply": () => ({ body: READ }),
      "POST /api/v1/clusters/1/operations/parallel-apply": (req) => {
        requests.push(req.body);
        return { status: 202, body: operation({ id: 1, type: "parallel_apply", dry_run: true }) };
      },
      "GET /api/v1/clusters/1/operations/1": () => ({ body: operation({ id: 1, type: "parallel_apply", dry_run: true }) }),
    });
    renderSignedIn(<ParallelApply clusterId={1} serverId={2} serverName={(id) => `server ${id}`} />, { role: "operator" });
    expect(await screen.findByText("falls behind by 830 txn/s (domain 1)")).toBeTruthy();
    expect(screen.getByText("2,310 txn/s")).toBeTruthy();
    expect(screen.getByText("1,480 txn/s")).toBeTruthy();
    await userEvent.click(screen.getByRole("button", { name: "Change parallel apply…" }));
    expect(screen.getByRole("note").textContent).toContain("one pool for the whole server");
    const workers = screen.getByLabelText("Workers");
    await userEvent.clear(workers);
    await userEvent.type(workers, "8");
    await userEvent.click(screen.getByRole("button", { name: /preview/i }));
    await waitFor(() => expect(requests).toContainEqual({
      dry_run: true, registered_server_id: 2, connection: null, mode: "optimistic", workers: 8, domain_workers_max: 0,
    }));
  });
});

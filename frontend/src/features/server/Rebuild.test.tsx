// "Rebuild from a donor…" against a fake backend: the dry run's and the run's exact requests (a donor named, a
// throttle); while it runs, the progress bar moves with the copy's bytes, rate and time left and says why it paused;
// cancel posts the operation's cancel; a bad throttle is refused before any request; the master as donor needs the
// forcing box; a viewer sees no control. The byte and throttle helpers are pure.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { CLUSTER, TOPOLOGY, operation, step } from "../../test/fixtures";
import { mockApi } from "../../test/mockApi";
import { renderSignedIn } from "../../test/render";
import { copiedPercent, formatBytes } from "../operations/CopyProgress";
import { Rebuild, parseThrottle } from "./Rebuild";

const names = (id: number) => ({ 1: "a", 2: "b", 3: "c" })[id] ?? `server ${id}`;

const progress = (bytes_done: number, paused = false) => ({
  phase: "copying", bytes_done, bytes_total: 100_000_000, rate_bytes_s: 5_000_000, eta_s: (100_000_000 - bytes_done) / 5_000_000,
  paused, paused_reason: paused ? "donor b trails its source by 12 s (threshold 10 s)" : null,
});

function backend(reads: unknown[]) {
  let read = 0;
  return mockApi({
    "GET /api/v1/clusters/1": () => ({ body: CLUSTER }),
    "GET /api/v1/clusters/1/topology": () => ({ body: TOPOLOGY }),
    "POST /api/v1/clusters/1/operations/rebuild": (req) =>
      (req.body as { dry_run: boolean }).dry_run
        ? { status: 202, body: operation({ id: 1, type: "rebuild", dry_run: true } as never) }
        : { status: 202, body: operation({ id: 2, type: "rebuild", dry_run: false, state: "running" } as never) },
    "GET /api/v1/clusters/1/operations/1": () => ({
      body: operation({ id: 1, type: "rebuild", dry_run: true, state: "succeeded", steps: [step("preflight", "passed")],
        result: { registered_server_id: 3, donor_registered_server_id: 2, source_registered_server_id: 1, progress: null } } as never),
    }),
    "GET /api/v1/clusters/1/operations/2": () => ({ body: reads[Math.min(read++, reads.length - 1)] }),
    "POST /api/v1/clusters/1/operations/2/cancel": () => ({ status: 202, body: reads[reads.length - 1] }),
  });
}

const running = (bytes: number, paused = false) =>
  operation({ id: 2, type: "rebuild", dry_run: false, state: "running", steps: [step("preflight", "passed"), step("copy", "running")],
    result: { registered_server_id: 3, donor_registered_server_id: 2, source_registered_server_id: 1, progress: progress(bytes, paused) } } as never);

async function openAndPreview(user: ReturnType<typeof userEvent.setup>) {
  await user.click(await screen.findByRole("button", { name: "Rebuild from a donor…" }));
  const form = await screen.findByRole("group", { name: "Rebuild c from a donor" });
  await within(form).findByRole("option", { name: "b (server_id 2) — replica" });
  await user.selectOptions(within(form).getByLabelText("Donor"), "2");
  await user.type(within(form).getByLabelText("Throttle (MB/s)"), "20");
  await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
  expect(await within(form).findByText("c can be rebuilt from b.", {}, { timeout: 5000 })).toBeTruthy();
  await user.type(within(form).getByLabelText(/Type the cluster name/), "prod-eu");
  return form;
}

describe("rebuild a replica from a donor", () => {
  it("sends the previewed request, shows the copy's progress as it moves, and cancels", async () => {
    const { requests } = backend([running(10_000_000), running(40_000_000, true)]);
    const user = userEvent.setup();
    renderSignedIn(<Rebuild clusterId={1} serverId={3} label="c" serverName={names} />, { role: "operator" });
    const form = await openAndPreview(user);
    await user.click(within(form).getByRole("button", { name: "Rebuild" }));
    const posts = () => requests.filter((r) => r.method === "POST");
    await waitFor(() => expect(posts()).toHaveLength(2));
    expect(posts().map((r) => r.body)).toEqual([
      { dry_run: true, registered_server_id: 3, donor_registered_server_id: 2, force_master_donor: false, throttle_mb_s: 20, resume: false },
      { dry_run: false, registered_server_id: 3, donor_registered_server_id: 2, force_master_donor: false, throttle_mb_s: 20, resume: false },
    ]);
    const live = await screen.findByLabelText("Rebuild under way", {}, { timeout: 5000 });
    expect(within(live).getByRole("status").textContent).toBe("Copying: 10.0 MB of about 100 MB (10 %) · 5.0 MB/s · about 18 s left");
    await waitFor(() => expect((within(live).getByLabelText("Copied") as HTMLProgressElement).value).toBe(40), { timeout: 5000 });
    expect(within(live).getByRole("alert").textContent).toBe("Paused: donor b trails its source by 12 s (threshold 10 s).");
    await user.click(within(live).getByRole("button", { name: "Cancel the rebuild (the server stays stopped and marked)" }));
    await waitFor(() => expect(posts().map((r) => r.path)).toContain("/api/v1/clusters/1/operations/2/cancel"));
  });

  it("refuses a throttle that is not a positive number before sending anything", async () => {
    const { requests } = backend([]);
    const user = userEvent.setup();
    renderSignedIn(<Rebuild clusterId={1} serverId={3} label="c" serverName={names} />, { role: "operator" });
    await user.click(await screen.findByRole("button", { name: "Rebuild from a donor…" }));
    const form = await screen.findByRole("group", { name: "Rebuild c from a donor" });
    await user.type(within(form).getByLabelText("Throttle (MB/s)"), "-3");
    expect(within(form).getByText("The throttle is a number of MB/s above 0, or empty for no limit.")).toBeTruthy();
    expect((within(form).getByRole("button", { name: "Preview (dry run)" }) as HTMLButtonElement).disabled).toBe(true);
    expect(requests.filter((r) => r.method === "POST")).toEqual([]);
  });

  it("asks to force a copy from the master, and sends the forcing only when ticked", async () => {
    const { requests } = backend([]);
    const user = userEvent.setup();
    renderSignedIn(<Rebuild clusterId={1} serverId={3} label="c" serverName={names} />, { role: "operator" });
    await user.click(await screen.findByRole("button", { name: "Rebuild from a donor…" }));
    const form = await screen.findByRole("group", { name: "Rebuild c from a donor" });
    await within(form).findByRole("option", { name: "a (server_id 1) — master" });
    await user.selectOptions(within(form).getByLabelText("Donor"), "1");
    await user.click(within(form).getByRole("checkbox", { name: /Copy from the master anyway/ }));
    await user.click(within(form).getByRole("button", { name: "Preview (dry run)" }));
    await waitFor(() => expect(requests.filter((r) => r.method === "POST")).toHaveLength(1));
    expect(requests.find((r) => r.method === "POST")!.body).toEqual(
      { dry_run: true, registered_server_id: 3, donor_registered_server_id: 1, force_master_donor: true, throttle_mb_s: null, resume: false },
    );
  });

  it("shows a viewer no control", async () => {
    backend([]);
    renderSignedIn(<Rebuild clusterId={1} serverId={3} label="c" serverName={names} />, { role: "viewer" });
    await waitFor(() => expect(screen.queryByRole("button", { name: "Rebuild from a donor…" })).toBeNull());
  });
});

describe("copy progress helpers", () => {
  it("formats bytes in decimal units and caps the share at its estimate", () => {
    expect([formatBytes(999), formatBytes(1_000), formatBytes(12_345_678), formatBytes(250_000_000_000)]).toEqual(
      ["999 bytes", "1.0 kB", "12.3 MB", "250 GB"],
    );
    const base = { phase: "copying" as const, rate_bytes_s: 1, paused: false };
    expect(copiedPercent({ ...base, bytes_done: 50, bytes_total: 200 })).toBe(25);
    expect(copiedPercent({ ...base, bytes_done: 300, bytes_total: 200 })).toBe(100);
    expect(copiedPercent({ ...base, bytes_done: 300, bytes_total: null })).toBeNull();
  });

  it("reads the throttle field: empty is no limit, positive numbers are MB/s, the rest is invalid", () => {
    expect([parseThrottle(""), parseThrottle(" 12.5 "), parseThrottle("0"), parseThrottle("-1"), parseThrottle("fast")]).toEqual(
      [null, 12.5, "invalid", "invalid", "invalid"],
    );
  });
});

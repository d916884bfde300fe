// The drill history's live-writer column: the writer's window and counts in one line, per-phase counts on opening,
// and lost canaries named loudly.
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import { WriterReport, writerSummary } from "./WriterReport";

const report = (over: Partial<Schemas["CanaryWriterReport"]> = {}): Schemas["CanaryWriterReport"] => ({
  interval_ms: 40, domains: [1, 2], per_domain_max: 2000, capped: false,
  phases: {
    before: { acknowledged: 36, refused: 0, unknown: 0 },
    during: { acknowledged: 4, refused: 3, unknown: 1 },
    after: { acknowledged: 40, refused: 0, unknown: 0 },
  },
  window_s: 0.061, acknowledged: 80, verified: true, lost: 0, duplicated: 0,
  windows: [
    { switch: "switch", old_master_registered_server_id: 1, new_master_registered_server_id: 2, window_s: 0.061 },
    { switch: "switch_back", old_master_registered_server_id: 2, new_master_registered_server_id: 1, window_s: 0.12 },
  ],
  lost_canaries: [], duplicated_gtids: [], behind: [], ...over,
});

describe("WriterReport", () => {
  it("sums refused and unknown writes over the phases beside the window", () => {
    expect(writerSummary(report())).toBe("window 61.0 ms · 80 acknowledged, 3 refused, 1 unknown · none lost");
    expect(writerSummary(report({ verified: false, window_s: null }))).toBe(
      "window — · 80 acknowledged, 3 refused, 1 unknown · not verified",
    );
  });

  it("shows each phase and each switch's window when opened", async () => {
    const user = userEvent.setup();
    render(<WriterReport run={{ id: 7, canary_writer: report() }} />);
    await user.click(screen.getByText(/^window 61\.0 ms/));
    const table = screen.getByRole("table", { name: "Canary writer of drill #7" });
    const during = within(table).getByRole("row", { name: /during/ });
    expect([...during.querySelectorAll("td")].map((c) => c.textContent)).toEqual(["4", "3", "1"]);
    expect(screen.getByText(/switch 1 → 2: writes unavailable 61\.0 ms/)).toBeTruthy();
    expect(screen.getByText(/switch back 2 → 1: writes unavailable 120\.0 ms/)).toBeTruthy();
    expect(screen.queryByRole("list", { name: /Lost or duplicated/ })).toBeNull();
  });

  it("names lost and duplicated canaries loudly", () => {
    render(
      <WriterReport
        run={{
          id: 8,
          canary_writer: report({ lost: 1, duplicated: 1, lost_canaries: ["s3: d1-17 (1-1-90, during) is missing"], duplicated_gtids: ["1-2-5"] }),
        }}
      />,
    );
    expect(screen.getByText(/1 lost, 1 duplicated$/).className).toBe("error");
    const list = screen.getByRole("list", { name: "Lost or duplicated canaries of drill #8" });
    expect(within(list).getAllByRole("listitem").map((li) => li.textContent)).toEqual([
      "s3: d1-17 (1-1-90, during) is missing",
      "duplicated GTID 1-2-5",
    ]);
  });

  it("says when the drill ran no writer", () => {
    render(<WriterReport run={{ id: 9, canary_writer: null }} />);
    expect(screen.getByText("not run")).toBeTruthy();
  });
});

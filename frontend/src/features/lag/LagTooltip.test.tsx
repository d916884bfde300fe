// The lag tooltip lists every shown series at the hovered instant, largest lag first — including those with no
// sample exactly then — and leaves out only a series that had not begun.
import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { LagSeries } from "./lagSeries";
import { LagTooltip } from "./LagTooltip";
import { seriesStyles } from "./seriesStyle";

const series = (key: string, points: [number, number][]): LagSeries => ({
  key, label: key, linkIds: [1], replicaServerId: 1, domain: 1, points: points.map(([t, seconds]) => ({ t, seconds, transactions: 0 })),
});

describe("LagTooltip", () => {
  it("gives each series' value at the instant, not only those with a point there", () => {
    const all = [series("a", [[0, 1], [100, 5]]), series("b", [[0, 9]]), series("c", [[50, 2]]), series("late", [[500, 7]])];
    render(<LagTooltip at={60} metric="seconds" series={all} styles={seriesStyles(all)} format={(v) => `${v} s`} zone="UTC" />);
    const rows = screen.getAllByRole("row").map((row) => row.textContent);
    expect(rows).toEqual(["b9 s", "c2 s", "a1 s"]);
    expect(screen.getByRole("status").textContent).toMatch(/^\d+ \w+ \d\d:\d\d:\d\d/);
    expect(screen.getByRole("status").textContent).toContain("UTC");
  });
});

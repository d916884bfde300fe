// Every lag series distinct by colour, and each domain by its dash pattern too.
import { describe, expect, it } from "vitest";
import type { LagSeries } from "./lagSeries";
import { domainDash, seriesStyles } from "./seriesStyle";

const series = (key: string, domain: number): LagSeries => ({ key, label: key, linkIds: [1], replicaServerId: 1, domain, points: [] });

describe("seriesStyles", () => {
  it("gives every series of a chart its own colour, up to twenty", () => {
    const all = Array.from({ length: 20 }, (_, i) => series(`s${i}`, i % 3));
    const colors = [...seriesStyles(all).values()].map((s) => s.color);
    expect(new Set(colors).size).toBe(20);
  });

  it("draws each domain with its own dash pattern, domain 0 solid", () => {
    const styles = seriesStyles([series("a", 0), series("b", 1), series("c", 2)]);
    expect(styles.get("a")!.dash).toBeUndefined();
    expect(new Set([styles.get("a")!.dash, styles.get("b")!.dash, styles.get("c")!.dash]).size).toBe(3);
    expect(domainDash(1)).toBe(styles.get("b")!.dash);
  });
});

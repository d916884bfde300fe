// The connection settings in words: the compact line names delay, parallel apply, semi-sync role and filters; the
// full list says every setting, "server default" where the replica left one unset.
import { describe, expect, it } from "vitest";
import { settingsLine, settingsList } from "./connectionSettings";

const BASE = { delay_s: 0, ignore_duplicates: false, heartbeat_ms: null, parallel_mode: null, workers: null,
  domain_workers_max: null, semi_sync_replica: null, filters: {} };

describe("connection settings", () => {
  it("says the settings an operator looks for in one line", () => {
    expect(settingsLine(null)).toBeNull();
    expect(settingsLine(BASE)).toBe("defaults");
    expect(
      settingsLine({ ...BASE, delay_s: 30, parallel_mode: "optimistic", workers: 4, domain_workers_max: 2,
        semi_sync_replica: true, filters: { ignore_domain_ids: "7", replicate_do_db: "app" } }),
    ).toBe("delay 30 s · optimistic × 4 (2/domain) · semi-sync · 2 filters");
  });

  it("lists every setting with its value", () => {
    const list = settingsList({ ...BASE, delay_s: 30, filters: { ignore_domain_ids: "7" } });
    expect(list).toContainEqual(["delay", "30 s (MASTER_DELAY)"]);
    expect(list).toContainEqual(["workers", "server default"]);
    expect(list).toContainEqual(["ignore_domain_ids", "7"]);
  });
});

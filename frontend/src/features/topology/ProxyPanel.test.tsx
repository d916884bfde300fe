// The proxies panel: where applications write and read and which servers that reaches, a proxy that cannot be read
// named with why, and nothing at all for a cluster no proxy fronts.
import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ProxyList } from "./ProxyPanel";

const NAMES = new Map([
  [1, "s1"],
  [2, "s2"],
  [3, "s3"],
]);

describe("ProxyList", () => {
  it("says where writes and reads go", () => {
    render(
      <ProxyList
        names={NAMES}
        proxies={[
          {
            proxy: "/run/haproxy/a.sock", reachable: true, error: null, writer_addresses: ["127.0.0.1:3341"],
            reader_addresses: ["127.0.0.1:3342"], writer_registered_server_id: 2,
            servers: [
              { registered_server_id: 1, writer: "DOWN", reader: "UP" },
              { registered_server_id: 2, writer: "UP", reader: "DOWN" },
              { registered_server_id: 3, writer: "DOWN", reader: "UP 1/2" },
            ],
          },
        ]}
      />,
    );
    expect(screen.getByRole("region", { name: "Proxies" }).textContent).toContain(
      "/run/haproxy/a.sock: writes to 127.0.0.1:3341 go to s2; reads at 127.0.0.1:3342 go to s1, s3.",
    );
  });

  it("names a proxy it could not read, and shows nothing without proxies", () => {
    const { unmount } = render(
      <ProxyList
        names={NAMES}
        proxies={[{ proxy: "/x.sock", reachable: false, error: "cannot read the admin socket: refused",
                    writer_addresses: [], reader_addresses: [], writer_registered_server_id: null, servers: [] }]}
      />,
    );
    expect(screen.getByRole("alert").textContent).toBe("cannot read the admin socket: refused");
    unmount();
    render(<ProxyList names={NAMES} proxies={[]} />);
    expect(screen.queryByRole("region", { name: "Proxies" })).toBeNull();
  });
});

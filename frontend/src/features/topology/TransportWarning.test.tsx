// The clear-text banner: shown for a cluster spoken to without TLS, in words that fit its kind of servers; absent
// when the transport is encrypted.
import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { CLUSTER } from "../../test/fixtures";
import { TransportWarning } from "./TransportWarning";

describe("TransportWarning", () => {
  it("says MariaDB logins cross the network unencrypted when no CA is set", () => {
    render(<TransportWarning cluster={{ ...CLUSTER, db_user_set: true, db_password_set: true, plaintext_transport: true }} />);
    expect(screen.getByRole("alert", { name: "Clear-text transport" }).textContent).toBe(
      "Clear text: no CA certificate is set for this cluster, so its MariaDB logins and queries cross the network " +
        "unencrypted. See docs/security.md.",
    );
  });

  it("names the node token for ferryd nodes, and shows nothing over TLS", () => {
    const { unmount } = render(<TransportWarning cluster={{ ...CLUSTER, plaintext_transport: true }} />);
    expect(screen.getByRole("alert", { name: "Clear-text transport" }).textContent).toContain("node token");
    unmount();
    render(<TransportWarning cluster={{ ...CLUSTER, plaintext_transport: false }} />);
    expect(screen.queryByRole("alert")).toBeNull();
  });
});

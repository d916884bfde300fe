// A server page's address: the server_id a server reports names it; one not read yet or shared by two registered
// servers is addressed as registered-N; a path's ref resolves to exactly one server, a list, or words saying why not.
import { describe, expect, it } from "vitest";
import { isServerRef, resolveServerRef, serverPath, serverRef } from "./serverRef";

const S = (id: number, reported: number | null) => ({ id, reported_server_id: reported, name: `s${id}` });
const SERVERS = [S(5, 1), S(6, 2), S(7, null), S(8, 40), S(9, 40)];

describe("serverRef", () => {
  it("addresses a server by the server_id it reports, else by the control plane's id said as such", () => {
    expect(serverPath(2, SERVERS[0]!, SERVERS)).toBe("/clusters/2/servers/1");
    expect(serverRef(SERVERS[2]!, SERVERS)).toBe("registered-7");
    expect(serverRef(SERVERS[3]!, SERVERS)).toBe("registered-8"); // server_id 40 is reported twice
    expect(serverRef(SERVERS[3]!)).toBe("40");
  });

  it("resolves a path's ref to the one server it names", () => {
    expect(resolveServerRef("1", SERVERS)).toEqual({ kind: "found", server: SERVERS[0] });
    expect(resolveServerRef("registered-7", SERVERS)).toEqual({ kind: "found", server: SERVERS[2] });
    expect(resolveServerRef("40", SERVERS)).toEqual({ kind: "ambiguous", servers: [SERVERS[3], SERVERS[4]] });
    // The control plane's id is not a server_id: /servers/5 does not open the server registered as 5.
    expect(resolveServerRef("5", SERVERS)).toEqual({
      kind: "missing",
      words: "No server of this cluster reports server_id 5 (removed, or not read yet?).",
    });
    expect(resolveServerRef("registered-99", SERVERS).kind).toBe("missing");
    expect(resolveServerRef("abc", SERVERS).kind).toBe("invalid");
  });

  it("tells a ref's form", () => {
    expect(["0", "1", "4294967295", "registered-3"].map(isServerRef)).toEqual([true, true, true, true]);
    expect(["", "01", "-1", "1.5", "registered-", "registered-0", "x1"].map(isServerRef)).toEqual([false, false, false, false, false, false, false]);
  });
});

// HAProxy in front of seed000, as the stack starts it: the topology page says where applications write and read
// through the proxy, and that writes go to one of seed000's masters, as the proxy's admin socket reports it.
import { mariadbCluster } from "../mariadb";
import { expect, test } from "../fixtures";

test.use({ role: "viewer" });

test("the topology page shows the proxy in front of the cluster and where its writes go", async ({ stack, topology }) => {
  const seed = mariadbCluster(stack, "seed000");
  await topology.open(seed.id, seed.name);
  const proxies = topology.proxies;
  // The proxy's checks settle on the writer within a few of their 250 ms intervals after it starts.
  await expect(proxies).toContainText(/haproxy-seed000\.sock: writes to 127\.0\.0\.1:\d+ go to \S+; reads at 127\.0\.0\.1:\d+ go to /, {
    timeout: 60_000,
  });
});

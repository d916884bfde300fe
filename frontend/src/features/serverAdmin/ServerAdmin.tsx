// The cluster page's server administration, for operators (the API's role for adding servers and discovery): add a
// server (then discover from it), discover from a registered one, and see which servers await an admin's approval
// (an admin approves them there). A viewer sees none of it.
import { useState } from "react";
import { useServers } from "../../api/queries";
import { RequireRole } from "../../auth/RequireRole";
import { AddServerForm } from "./AddServerForm";
import { DiscoverFromServer } from "./DiscoverFromServer";
import { PendingApprovals } from "./PendingApprovals";

/** `open`: shown unfolded at first (an empty cluster); the reader may fold it, and it stays as they left it. */
export function ServerAdmin({ clusterId, open = false }: { clusterId: number; open?: boolean }) {
  const servers = useServers(clusterId);
  const [openAtFirst] = useState(open);
  return (
    <RequireRole role="operator">
      <section id="add-server" aria-label="Add servers" className="server-admin">
        <PendingApprovals clusterId={clusterId} servers={servers.data ?? []} />
        <details open={openAtFirst}>
          <summary>Add a server, discover servers</summary>
          <AddServerForm clusterId={clusterId} />
          <DiscoverFromServer clusterId={clusterId} servers={servers.data ?? []} />
        </details>
      </section>
    </RequireRole>
  );
}

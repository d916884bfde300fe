// Servers whose address awaits an admin's approval (registered, discovered or moved by an operator to an address
// the deployment does not trust): nothing connects to them — no poll, no credentials — until then. Operators see
// the list; an admin approves each address (it then is polled with the cluster's credentials).
import { useApproveServer } from "../../api/serverAdmin";
import type { Schemas } from "../../api/client";
import { RequireRole } from "../../auth/RequireRole";
import { ConfirmButton } from "../../components/ConfirmButton";
import { ErrorMessage } from "../../components/QueryState";

function address(server: Schemas["ServerRead"]): string {
  const host = server.host.includes(":") ? `[${server.host}]` : server.host;
  return [server.protocol_port, server.admin_port].filter((p) => p != null).map((p) => `${host}:${p}`).join(", ") || host;
}

export function PendingApprovals({ clusterId, servers }: { clusterId: number; servers: Schemas["ServerRead"][] }) {
  const approve = useApproveServer(clusterId);
  const pending = servers.filter((s) => !s.approved);
  if (pending.length === 0) return null;
  return (
    <div className="banner" role="status" aria-label="Servers awaiting approval">
      <p>
        Awaiting an admin's approval — nothing connects to these addresses (no poll, no credentials sent) until an
        admin approves them:
      </p>
      <ul>
        {pending.map((server) => (
          <li key={server.id}>
            {server.label} at <span className="mono">{address(server)}</span>{" "}
            <RequireRole role="admin">
              <ConfirmButton
                label="Approve address"
                confirmLabel={`Approve ${address(server)}: the control plane sends it the cluster's credentials`}
                disabled={approve.isPending}
                onConfirm={() => approve.mutate(server.id)}
              />
            </RequireRole>
          </li>
        ))}
      </ul>
      {approve.error ? <ErrorMessage error={approve.error} /> : null}
    </div>
  );
}

// Editing and removing a registered server (operators): PATCH /clusters/{id}/servers/{registered id} with only what
// changed, DELETE the same path; both refresh everything about the cluster.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "./client";
import { queryKeys } from "./queryKeys";

export type ServerUpdate = Schemas["ServerUpdate"];
type Server = Schemas["ServerRead"];

/** The edit form as typed: ports as text (empty: unchanged when unset), labels as `key=value, key=value`. */
export interface ServerForm {
  name: string;
  host: string;
  protocolPort: string;
  adminPort: string;
  promotionRule: Schemas["PromotionRule"];
  labels: string;
}

export function serverForm(server: Server): ServerForm {
  return {
    name: server.name,
    host: server.host,
    protocolPort: server.protocol_port == null ? "" : String(server.protocol_port),
    adminPort: server.admin_port == null ? "" : String(server.admin_port),
    promotionRule: server.promotion_rule,
    labels: Object.entries(server.labels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(", "),
  };
}

/** The labels typed as `key=value, key=value`, or what is wrong with them. */
export function parseLabels(text: string): Record<string, string> | string {
  const labels: Record<string, string> = {};
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const at = part.indexOf("=");
    if (at < 1) return `Label "${part}": write it as key=value.`;
    labels[part.slice(0, at).trim()] = part.slice(at + 1).trim();
  }
  return labels;
}

function port(text: string, what: string): number | null | string {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  if (!/^\d+$/.test(trimmed) || Number(trimmed) < 1 || Number(trimmed) > 65535) return `${what}: a port from 1 to 65535.`;
  return Number(trimmed);
}

/** The PATCH body holding only what the form changes, or what is wrong with the form in words. */
export function serverChanges(server: Server, form: ServerForm): ServerUpdate | string {
  const body: ServerUpdate = {};
  const name = form.name.trim();
  if (name === "") return "A server needs a name.";
  if (name !== server.name) body.name = name;
  const host = form.host.trim();
  if (host === "") return "A server needs a host.";
  if (host !== server.host) body.host = host;
  for (const [key, text, what, current] of [
    ["protocol_port", form.protocolPort, "Protocol / SQL port", server.protocol_port],
    ["admin_port", form.adminPort, "Admin port", server.admin_port],
  ] as const) {
    const value = port(text, what);
    if (typeof value === "string") return value;
    if (value === null && current != null) return `${what}: it cannot be unset once known (give a port).`;
    if (value !== null && value !== current) body[key] = value;
  }
  if (form.promotionRule !== server.promotion_rule) body.promotion_rule = form.promotionRule;
  const labels = parseLabels(form.labels);
  if (typeof labels === "string") return labels;
  const before = server.labels ?? {};
  const same = Object.keys(labels).length === Object.keys(before).length && Object.entries(labels).every(([k, v]) => before[k] === v);
  if (!same) body.labels = labels;
  return body;
}

export function useUpdateServer(clusterId: number, serverId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: ServerUpdate) =>
      unwrap(
        api.PATCH("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}", {
          params: { path: { cluster_id: clusterId, registered_server_id: serverId } },
          body,
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.cluster(clusterId) }),
  });
}

export function useDeleteServer(clusterId: number, serverId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE("/api/v1/clusters/{cluster_id}/servers/{registered_server_id}", {
          params: { path: { cluster_id: clusterId, registered_server_id: serverId } },
        }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.cluster(clusterId) });
      void queryClient.invalidateQueries({ queryKey: queryKeys.clustersOverview() });
    },
  });
}

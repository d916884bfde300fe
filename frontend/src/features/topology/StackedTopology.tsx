// The topology on a screen too narrow for the graph (a phone): the same servers stacked one under another in the
// graph's order (masters first, each replica below its masters), each a card linking to its page — name, role and
// server_id, address, health and flags, position — followed by the connections it replicates over, each with its
// master, name, state and lag in the graph's words. Nothing scrolls sideways.
import { Link } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { healthTone } from "../../components/StatusBadge";
import { nodeIdentity, serverPath } from "../server/serverRef";
import { connectionState } from "./connectionState";
import type { Layout } from "./layout";

type Topology = Schemas["TopologyGraph"];

export function StackedTopology({ topology, layout, fenced }: { topology: Topology; layout: Layout; fenced: ReadonlySet<number> }) {
  const identities = topology.nodes.map(nodeIdentity);
  const nodes = [...layout.nodes].sort((a, b) => a.depth - b.depth || a.x - b.x);
  const names = new Map(layout.nodes.map((n) => [n.key, n.label]));
  return (
    <ol
      className="topology-stacked"
      aria-label={`Topology, stacked: ${topology.nodes.length} servers, ${topology.edges.length} replication connections`}
    >
      {nodes.map((placed) => {
        const node = placed.node;
        const incoming = layout.edges.filter((e) => e.to.key === placed.key);
        if (node == null) {
          return (
            <li key={placed.key} className="topo-card topo-placeholder" data-server={placed.label}>
              <strong>{placed.label}</strong>
              <div className="small">not a registered server</div>
            </li>
          );
        }
        const isFenced = fenced.has(node.registered_server_id);
        const flags = [
          node.read_only === true ? "read-only" : node.read_only === false ? "writable" : "read-only ?",
          node.maintenance ? "MAINTENANCE" : null,
          isFenced ? "FENCED" : null,
        ].filter(Boolean);
        return (
          <li
            key={placed.key}
            className={`topo-card tone-${healthTone(node.health)}${node.role === "master" ? " topo-master" : ""}`}
            data-server={node.name}
            aria-label={`${node.name}: ${node.role}, ${node.health}, ${flags.join(", ")}`}
          >
            <Link to={serverPath(topology.cluster_id, nodeIdentity(node), identities)} className="topo-card-name">
              {node.role === "master" ? "★ " : ""}
              {node.name}
            </Link>
            <div className="small">
              {node.role.toUpperCase()} · server_id {node.reported_server_id ?? "?"} · {node.host}
              {node.protocol_port ? `:${node.protocol_port}` : ""}
            </div>
            <div className="small">
              {node.health} · {flags.join(" · ")}
            </div>
            <div className="small mono wrap">{node.gtid_current_pos ?? "no position"}</div>
            {incoming.length > 0 ? (
              <ul className="topo-card-links" aria-label={`${node.name} replicates from`}>
                {incoming.map(({ edge, from }) => {
                  const state = connectionState(edge);
                  return (
                    <li key={edge.link_id} className={`tone-${state.tone}`}>
                      ← {names.get(from.key) ?? from.label} over <span className="mono">{edge.connection || "(default connection)"}</span>:{" "}
                      {state.text}
                      {state.lag ? ` · ${state.lag}` : ""}
                    </li>
                  );
                })}
              </ul>
            ) : null}
          </li>
        );
      })}
    </ol>
  );
}

// The topology as an SVG graph: one box per server (master marked, health, read-only, maintenance in words and
// colour), one arrow per replication connection from master to replica, labelled with its name, state and lag.
import type { Schemas } from "../../api/client";
import { healthTone } from "../../components/StatusBadge";
import { connectionState } from "./connectionState";
import { layoutTopology, NODE_H, NODE_W, type PlacedEdge, type PlacedNode } from "./layout";

type Topology = Schemas["TopologyGraph"];

/** Where along an edge its label sits (0 = master, 1 = replica), and the label's width. */
const LABEL_AT = 0.62;
const LABEL_W = 170;

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function NodeBox({ placed, fenced }: { placed: PlacedNode; fenced: boolean }) {
  const { node, x, y, label } = placed;
  if (!node) {
    return (
      <g className="topo-node tone-muted" transform={`translate(${x},${y})`}>
        <rect width={NODE_W} height={NODE_H} rx={8} strokeDasharray="6 4" />
        <text x={12} y={24} className="topo-title">{shorten(label, 26)}</text>
        <text x={12} y={46}>not a registered server</text>
      </g>
    );
  }
  const isMaster = node.role === "master";
  const flags = [
    node.read_only === true ? "read-only" : node.read_only === false ? "writable" : "read-only ?",
    node.maintenance ? "MAINTENANCE" : null,
    fenced ? "FENCED" : null,
  ].filter(Boolean);
  const description = `${node.name}: ${node.role}, ${node.health}, ${flags.join(", ")}`;
  const software = `${node.kind === "mariadb" ? "MariaDB" : "ferryd"}${node.version ? ` ${node.version}` : ""}`;
  return (
    <g
      className={`topo-node tone-${healthTone(node.health)}${isMaster ? " topo-master" : ""}`}
      transform={`translate(${x},${y})`}
      role="listitem"
      aria-label={description}
      data-server={node.name}
    >
      <title>{`${description} (${software})`}</title>
      <rect width={NODE_W} height={NODE_H} rx={8} strokeWidth={isMaster ? 3 : 1.5} />
      <text x={12} y={22} className="topo-title">
        {isMaster ? "★ " : ""}
        {shorten(node.name, 18)}
      </text>
      <text x={NODE_W - 12} y={22} textAnchor="end" className="topo-role">
        {node.role.toUpperCase()}
      </text>
      <text x={12} y={42} className="small">
        {shorten(`${node.host}${node.protocol_port ? `:${node.protocol_port}` : ""} · id ${node.reported_server_id ?? "?"}`, 30)}
      </text>
      <text x={12} y={62} className="topo-health">
        {node.health}
        {" · "}
        {flags.join(" · ")}
      </text>
      <text x={12} y={81} className="small mono">
        {shorten(node.gtid_current_pos ?? "no position", 30)}
      </text>
    </g>
  );
}

function EdgeLine({ placed }: { placed: PlacedEdge }) {
  const { edge, from, to } = placed;
  const state = connectionState(edge);
  const x1 = from.x + NODE_W / 2;
  const y1 = from.y + NODE_H;
  const x2 = to.x + NODE_W / 2;
  const y2 = to.y;
  // The label sits nearer the replica, so the labels of one master's edges do not overlap.
  const midX = x1 + (x2 - x1) * LABEL_AT;
  const midY = y1 + (y2 - y1) * LABEL_AT;
  const name = edge.connection ?? "(unnamed)";
  return (
    <g className={`topo-edge tone-${state.tone}`} data-connection={name}>
      <title>{`${from.label} → ${to.label}, connection ${name}: ${state.text}${state.lag ? `, lag ${state.lag}` : ""}`}</title>
      <line x1={x1} y1={y1} x2={x2} y2={y2 - 4} markerEnd="url(#arrow)" strokeDasharray={state.tone === "ok" ? undefined : "6 4"} />
      <rect x={midX - LABEL_W / 2} y={midY - 26} width={LABEL_W} height={50} rx={4} className="topo-edge-label" />
      <text x={midX} y={midY - 10} textAnchor="middle" className="mono">{shorten(name, 20)}</text>
      <text x={midX} y={midY + 5} textAnchor="middle">{shorten(state.text, 24)}</text>
      <text x={midX} y={midY + 19} textAnchor="middle" className="small">{state.lag ?? "lag —"}</text>
    </g>
  );
}

/** `fenced`: registered server ids a failover fenced (the topology does not carry it; the servers list does). */
export function TopologyGraph({ topology, fenced = new Set<number>() }: { topology: Topology; fenced?: ReadonlySet<number> }) {
  const layout = layoutTopology(topology);
  return (
    <svg
      className="topology"
      viewBox={`0 0 ${layout.width} ${layout.height}`}
      width={layout.width}
      height={layout.height}
      role="img"
      aria-label={`Topology graph: ${topology.nodes.length} servers, ${topology.edges.length} replication connections`}
    >
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" className="topo-arrow" />
        </marker>
      </defs>
      {layout.edges.map((placed) => (
        <EdgeLine key={placed.edge.link_id} placed={placed} />
      ))}
      <g role="list">
        {layout.nodes.map((placed) => (
          <NodeBox key={placed.key} placed={placed} fenced={placed.node != null && fenced.has(placed.node.server_id)} />
        ))}
      </g>
    </svg>
  );
}

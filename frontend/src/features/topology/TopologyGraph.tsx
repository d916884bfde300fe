// The topology as an SVG graph spread over the width it is given: one box per server (its name on a line of its
// own, then its role and server id; master marked, health, read-only, maintenance in words and colour), one arrow
// per replication connection from master to replica, labelled with its name, state and lag where the label
// overlaps no other (layout.ts). A frame narrower than the narrowest graph (a phone) gets the servers stacked
// instead (StackedTopology.tsx).
import { useEffect, useRef, useState } from "react";
import { useNavigate } from "react-router-dom";
import type { Schemas } from "../../api/client";
import { healthTone } from "../../components/StatusBadge";
import { nodeIdentity, serverPath, type ServerIdentity } from "../server/serverRef";
import { connectionState } from "./connectionState";
import { StackedTopology } from "./StackedTopology";
import { LABEL_H, LABEL_W, layoutTopology, NODE_H, NODE_W, type PlacedEdge, type PlacedNode } from "./layout";

type Topology = Schemas["TopologyGraph"];

/** The width of the element `ref` points at, followed as it changes (0 until measured). */
function useWidth<T extends HTMLElement>(): [React.RefObject<T | null>, number] {
  const ref = useRef<T>(null);
  const [width, setWidth] = useState(0);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    setWidth(element.clientWidth);
    if (typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(() => setWidth(element.clientWidth));
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function NodeBox({ placed, fenced, clusterId, all }: { placed: PlacedNode; fenced: boolean; clusterId: number; all: readonly ServerIdentity[] }) {
  const navigate = useNavigate();
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
  const href = serverPath(clusterId, nodeIdentity(node), all);
  return (
    <g
      className={`topo-node tone-${healthTone(node.health)}${isMaster ? " topo-master" : ""}`}
      transform={`translate(${x},${y})`}
      role="listitem"
      aria-label={description}
      data-server={node.name}
    >
      {/* The box is a link to the server's page, followed by the router (no reload), by mouse or keyboard. */}
      <a href={href} onClick={(e) => { e.preventDefault(); navigate(href); }} aria-label={`${node.name}: open its page`}>
      <title>{`${description} (${software})`}</title>
      <rect width={NODE_W} height={NODE_H} rx={8} strokeWidth={isMaster ? 3 : 1.5} />
      <text x={12} y={22} className="topo-title">
        {isMaster ? "★ " : ""}
        {shorten(node.name, 24)}
      </text>
      <text x={12} y={40} className="topo-role">
        {`${node.role.toUpperCase()} · server_id ${node.reported_server_id ?? "?"}`}
      </text>
      <text x={12} y={57} className="small">
        {shorten(`${node.host}${node.protocol_port ? `:${node.protocol_port}` : ""}`, 32)}
      </text>
      <text x={12} y={76} className="topo-health">
        {node.health}
        {" · "}
        {flags.join(" · ")}
      </text>
      <text x={12} y={94} className="small mono">
        {shorten(node.gtid_current_pos ?? "no position", 30)}
      </text>
      </a>
    </g>
  );
}

function EdgeLine({ placed }: { placed: PlacedEdge }) {
  const { edge, from, to, x1, y1, x2, y2, labelX: midX, labelY: midY } = placed;
  const state = connectionState(edge);
  const name = edge.connection ?? "(unnamed)";
  return (
    <g className={`topo-edge tone-${state.tone}`} data-connection={name}>
      <title>{`${from.label} → ${to.label}, connection ${name}: ${state.text}${state.lag ? `, lag ${state.lag}` : ""}`}</title>
      <line x1={x1} y1={y1} x2={x2} y2={y2 - 4} markerEnd="url(#arrow)" strokeDasharray={state.tone === "ok" ? undefined : "6 4"} />
      <rect x={midX - LABEL_W / 2} y={midY - LABEL_H / 2} width={LABEL_W} height={LABEL_H} rx={4} className="topo-edge-label" />
      <text x={midX} y={midY - 10} textAnchor="middle" className="mono">{shorten(name, 20)}</text>
      <text x={midX} y={midY + 5} textAnchor="middle">{shorten(state.text, 24)}</text>
      <text x={midX} y={midY + 19} textAnchor="middle" className="small">{state.lag ?? "lag —"}</text>
    </g>
  );
}

/** `fenced`: registered server ids a failover fenced (the topology does not carry it; the servers list does). */
export function TopologyGraph({ topology, fenced = new Set<number>() }: { topology: Topology; fenced?: ReadonlySet<number> }) {
  const [frame, available] = useWidth<HTMLDivElement>();
  const layout = layoutTopology(topology, available);
  const identities = topology.nodes.map(nodeIdentity);
  // Narrower than the graph's narrowest drawing (a phone): the servers stacked instead, nothing cut off sideways.
  if (available > 0 && available < layoutTopology(topology, 0).width) {
    return (
      <div ref={frame} className="topology-frame">
        <StackedTopology topology={topology} layout={layout} fenced={fenced} />
      </div>
    );
  }
  return (
    <div ref={frame} className="topology-frame">
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
            <NodeBox key={placed.key} placed={placed} fenced={placed.node != null && fenced.has(placed.node.registered_server_id)} clusterId={topology.cluster_id} all={identities} />
          ))}
        </g>
      </svg>
    </div>
  );
}

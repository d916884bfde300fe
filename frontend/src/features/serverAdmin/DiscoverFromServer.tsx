// "Discover from this server": run discovery with a registered server as the seed (it is known already; every
// server it replicates with or from that is not is registered), then say what was added and discovery's notes.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { seedBody, useDiscoverFrom } from "../../api/serverAdmin";
import { ErrorMessage } from "../../components/QueryState";
import { DiscoveryNotes } from "./DiscoveryNotes";

type Server = Pick<Schemas["ServerRead"], "id" | "name" | "kind" | "host" | "protocol_port" | "admin_port">;

export function DiscoverFromServer({ clusterId, servers }: { clusterId: number; servers: Server[] }) {
  const discover = useDiscoverFrom(clusterId);
  const seeds = servers.filter((s) => seedBody(s) !== null);
  const [chosen, setChosen] = useState<number | null>(null);
  const seed = seeds.find((s) => s.id === chosen) ?? seeds[0];
  if (seeds.length === 0) return null;
  const result = discover.data;
  return (
    <div className="discover-from" role="group" aria-label="Discover from a server">
      <label>
        Discover from{" "}
        <select value={seed?.id} onChange={(e) => setChosen(Number(e.target.value))}>
          {seeds.map((s) => (
            <option key={s.id} value={s.id}>{s.name}</option>
          ))}
        </select>
      </label>{" "}
      <button type="button" disabled={discover.isPending || !seed}
        onClick={() => { const body = seed ? seedBody(seed) : null; if (body) discover.mutate(body); }}>
        {discover.isPending ? "Discovering…" : "Discover"}
      </button>
      {discover.error ? <ErrorMessage error={discover.error} /> : null}
      {result ? (
        <div role="status" aria-label="Discovery outcome">
          <p>
            From {result.seed.name}: {result.added.length === 0 ? "no new server" : `added ${result.added.map((s) => s.name).join(", ")}`}
            {result.known.length > 0 ? `; known already: ${result.known.map((s) => s.name).join(", ")}` : ""}.
          </p>
          <DiscoveryNotes notes={result.notes} />
        </div>
      ) : null}
    </div>
  );
}

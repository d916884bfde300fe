"""Live positions: with a dashboard's stream open, the web process reads the positions of the cluster's servers
itself, so a write reaches the stream without any collector cycle (the collector is off here); a server answering
nonsense is skipped while the others still move; and while a server is read live, the collector's positions of it
are not sent (a dashboard never sees a position go back)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ferry_control.services.event_bus import ClusterEvent
from tests.collection.test_collector import viewer_events
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster, free_port_pair
from tests.helpers import WAIT_S, register, serve


async def test_a_write_reaches_an_open_stream_without_a_collector_cycle(
    live_app: LiveFactory, ferryd: FerrydCluster
) -> None:
    async def liar(scope: dict[str, Any], receive: Any, send: Any) -> None:  # a ferryd admin API that lies
        assert scope["type"] == "http"
        status = await asyncio.to_thread(ferryd.replica2.status)
        status["gtid_current_pos"] = "1-3-x"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(status).encode()})

    async with live_app(live_positions_interval_s=0.1) as live, serve(liar) as liar_url:
        assert not live.settings.collection.enabled
        cluster_id, ids = await register(live.client, ferryd)
        protocol_port, _ = free_port_pair()
        response = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/servers",
            json={"name": "liar", "host": "127.0.0.1", "protocol_port": protocol_port,
                  "admin_port": int(liar_url.rsplit(":", 1)[1])},
        )  # fmt: skip
        assert response.status_code == 201, response.text
        liar_id = response.json()["id"]
        try:
            async with viewer_events(live.app, live.tokens, cluster_id) as events:
                gtid = await asyncio.to_thread(ferryd.master.increment, "live", "k", domain=4)
                waiting = {ids["master"], ids["replica1"], ids["replica2"]}
                async with asyncio.timeout(WAIT_S):
                    while waiting:
                        name, data = await anext(events)
                        assert not (name == "position" and data["registered_server_id"] == liar_id), (
                            "nonsense is skipped"
                        )
                        if name == "position" and data["domain"] == 4 and data["gtid"] == gtid:
                            waiting.discard(data["registered_server_id"])

                # The collector's view of the master, older than what the stream already sent, then a fence.
                stale = {"registered_server_id": ids["master"], "domain": 4, "gtid": "4-0-0", "seq_no": 0}
                live.app.state.bus.publish(ClusterEvent(cluster_id, "position", stale))
                live.app.state.bus.publish(
                    ClusterEvent(cluster_id, "health", {"registered_server_id": 1, "state": "healthy"})
                )
                async with asyncio.timeout(WAIT_S):
                    name, data = await anext(events)
                    while name == "position" and data["gtid"] != "4-0-0":  # a live read may come first
                        name, data = await anext(events)
                assert name == "health", f"the collector's older position was sent: {data}"
        finally:
            await asyncio.to_thread(ferryd.converge)

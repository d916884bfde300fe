"""Maintenance has an owner (the caller's token, never the body), a reason and an end, and ends by itself: past its
end a server is out of maintenance for the API's reads and for candidate choice at once, and the worker's sweep then
records the end (an audit row and an event) exactly once. Bad requests get a 422 naming what is wrong; viewers are
refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.drivers.base import IoState, Positions, ReplicaConnection, ServerStatus, SqlState
from ferry_control.models import PromotionRule, Server
from ferry_control.services.event_bus import EventBus
from ferry_control.services.maintenance_expiry import MaintenanceExpiry
from ferry_control.services.orchestrator.candidates import candidate_pool
from ferry_control.services.orchestrator.snapshot import Link, ServerInfo, ServerView
from tests.api.test_clusters_servers import make_cluster
from tests.conftest import Tokens


async def make_server(client: httpx.AsyncClient, name: str = "db2", port: int = 7302) -> tuple[str, dict[str, Any]]:
    cluster = await make_cluster(client, f"c-{name}")
    base = f"/api/v1/clusters/{cluster['id']}/servers"
    created = await client.post(base, json={"name": name, "host": "127.0.0.1", "protocol_port": port})
    assert created.status_code == 201, created.text
    return f"{base}/{created.json()['id']}", created.json()


async def expire(sessionmaker: async_sessionmaker[AsyncSession], server_id: int) -> None:
    """Moves the server's maintenance end one second into the past (as if its time had come)."""
    async with session_scope(sessionmaker) as session:
        past = datetime.now(UTC) - timedelta(seconds=1)
        await session.execute(update(Server).where(Server.id == server_id).values(maintenance_until=past))


async def test_maintenance_records_the_callers_token_the_reason_and_the_end(client: httpx.AsyncClient) -> None:
    url, _ = await make_server(client)
    before = datetime.now(UTC)
    started = await client.put(
        f"{url}/maintenance", json={"maintenance": True, "reason": " disk swap ", "duration_s": 7200}
    )
    assert started.status_code == 200, started.text
    body = started.json()
    detail = body["maintenance_detail"]
    assert body["maintenance"] is True
    assert (detail["owner"], detail["reason"]) == ("test-operator", "disk swap")
    until = datetime.fromisoformat(detail["until"])
    assert before + timedelta(seconds=7199) <= until <= datetime.now(UTC) + timedelta(seconds=7201)
    assert (await client.get(url)).json()["maintenance_detail"] == detail
    topology = (await client.get(f"/api/v1/clusters/{body['cluster_id']}/topology")).json()
    assert [n["maintenance_detail"] for n in topology["nodes"]] == [detail]

    audit = (await client.get("/api/v1/audit")).json()
    row = next(e for e in audit if e["action"] == "set_maintenance")
    assert (row["actor"], row["details"]["owner"], row["details"]["reason"]) == (
        "test-operator",
        "test-operator",
        "disk swap",
    )
    assert row["details"]["until"] == until.isoformat()

    ended = await client.put(f"{url}/maintenance", json={"maintenance": False})
    assert ended.status_code == 200 and ended.json()["maintenance"] is False
    assert ended.json()["maintenance_detail"] is None


async def test_an_end_given_as_a_time_is_kept(client: httpx.AsyncClient) -> None:
    url, _ = await make_server(client)
    until = (datetime.now(UTC) + timedelta(hours=3)).replace(microsecond=0)
    started = await client.put(
        f"{url}/maintenance", json={"maintenance": True, "reason": "r", "until": until.isoformat()}
    )
    assert started.status_code == 200, started.text
    assert datetime.fromisoformat(started.json()["maintenance_detail"]["until"]) == until


async def test_an_owner_in_the_body_is_refused(client: httpx.AsyncClient) -> None:
    url, _ = await make_server(client)
    refused = await client.put(
        f"{url}/maintenance", json={"maintenance": True, "reason": "r", "duration_s": 60, "owner": "someone-else"}
    )
    assert refused.status_code == 422
    assert refused.json()["error"]["message"] == "body.owner: Extra inputs are not permitted"


def in_hours(hours: float) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).isoformat()


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        ({"maintenance": True, "duration_s": 60}, "maintenance_reason_required", "takes a reason"),
        ({"maintenance": True, "reason": "   ", "duration_s": 60}, "maintenance_reason_required", "takes a reason"),
        ({"maintenance": True, "reason": "r"}, "maintenance_end_required", "exactly one end: duration_s"),
        ({"maintenance": True, "reason": "r", "duration_s": 60, "until": in_hours(1)}, "maintenance_end_required",
         "both were given"),
        ({"maintenance": True, "reason": "r", "duration_s": 0}, "maintenance_too_short", "duration_s 0 is too short"),
        ({"maintenance": True, "reason": "r", "duration_s": 604801}, "maintenance_too_long",
         "duration_s 604801 is longer than the longest maintenance, 604800 s (7 days)"),
        ({"maintenance": True, "reason": "r", "until": in_hours(-1)}, "maintenance_until_past", "is not in the future"),
        ({"maintenance": True, "reason": "r", "until": in_hours(24 * 7 + 1)}, "maintenance_too_long",
         "is beyond the longest maintenance, 604800 s (7 days): at the latest"),
        ({"maintenance": True, "reason": "r", "until": "2030-01-01T00:00:00"}, "maintenance_until_naive",
         "has no time zone"),
        ({"maintenance": False, "reason": "r"}, "maintenance_fields_unexpected",
         "reason only go with maintenance: true"),
    ],
)  # fmt: skip
async def test_bad_maintenance_requests_get_a_422_saying_what_is_wrong(
    client: httpx.AsyncClient, body: dict[str, Any], code: str, message: str
) -> None:
    url, _ = await make_server(client)
    refused = await client.put(f"{url}/maintenance", json=body)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["code"] == code
    assert message in refused.json()["error"]["message"]
    assert (await client.get(url)).json()["maintenance"] is False


async def test_maintenance_is_not_set_through_patch(client: httpx.AsyncClient) -> None:
    url, _ = await make_server(client)
    refused = await client.patch(url, json={"maintenance": True})
    assert refused.status_code == 422
    assert (
        "maintenance is set with PUT /clusters/{cluster_id}/servers/{registered_server_id}/maintenance"
        in (refused.json()["error"]["message"])
    )


async def test_registering_in_maintenance_takes_a_reason_and_an_end(client: httpx.AsyncClient) -> None:
    cluster = await make_cluster(client, "reg")
    base = f"/api/v1/clusters/{cluster['id']}/servers"
    bare = await client.post(base, json={"host": "h", "protocol_port": 1, "maintenance": True})
    assert bare.status_code == 422 and "takes a reason and an end" in bare.json()["error"]["message"]
    made = await client.post(
        base, json={"host": "h", "protocol_port": 1, "maintenance": {"reason": "being built", "duration_s": 600}}
    )
    assert made.status_code == 201, made.text
    assert made.json()["maintenance_detail"]["owner"] == "test-operator"
    plain = await client.post(base, json={"host": "h", "protocol_port": 2, "maintenance": False})
    assert plain.status_code == 201 and plain.json()["maintenance"] is False


async def test_viewers_cannot_set_maintenance(client: httpx.AsyncClient, tokens: Tokens) -> None:
    url, _ = await make_server(client)
    body = {"maintenance": True, "reason": "r", "duration_s": 60}
    refused = await client.put(f"{url}/maintenance", json=body, headers=tokens.header("viewer"))
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == "token 'test-viewer' has role viewer; this needs operator"
    assert (await client.get(url)).json()["maintenance"] is False


async def test_past_its_end_a_server_is_out_of_maintenance_for_reads_then_the_sweep_records_it_once(
    client: httpx.AsyncClient, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    url, server = await make_server(client)
    cluster_id = server["cluster_id"]
    started = await client.put(f"{url}/maintenance", json={"maintenance": True, "reason": "patching", "duration_s": 60})
    assert started.json()["maintenance"] is True
    await expire(sessionmaker, server["id"])

    read = (await client.get(url)).json()
    assert (read["maintenance"], read["maintenance_detail"]) == (False, None)
    listed = (await client.get(f"/api/v1/clusters/{cluster_id}/servers")).json()
    assert [s["maintenance"] for s in listed] == [False]
    nodes = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["nodes"]
    assert [n["maintenance"] for n in nodes] == [False]

    bus = EventBus(100)
    seen: list[Any] = []
    bus.watchers.append(seen.append)
    sweep = MaintenanceExpiry(sessionmaker, bus)
    assert await sweep.sweep() == 1
    assert await sweep.sweep() == 0, "recorded once"
    assert [(e.type.value, e.data.maintenance, e.data.by, e.data.reason) for e in seen] == [
        ("maintenance", False, "expiry", "patching")
    ]
    audit = (await client.get("/api/v1/audit", params={"cluster_id": cluster_id})).json()
    row = next(e for e in audit if e["action"] == "maintenance_expired")
    assert (row["actor"], row["details"]["owner"], row["details"]["reason"]) == (None, "test-operator", "patching")
    assert row["details"]["server"] == "db2 (server_id not read yet)"


async def test_the_sweep_leaves_a_maintenance_that_has_not_ended(
    client: httpx.AsyncClient, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    url, _ = await make_server(client)
    await client.put(f"{url}/maintenance", json={"maintenance": True, "reason": "patching", "duration_s": 600})
    assert await MaintenanceExpiry(sessionmaker, EventBus(10)).sweep() == 0
    assert (await client.get(url)).json()["maintenance"] is True


def view(server: Server) -> ServerView:
    positions = Positions(binlog="1-1-5", slave="1-1-5", current="1-1-5", binlog_state="1-1-5")
    status = ServerStatus(server_id=server.id, read_only=True, positions=positions, connections=(), replicas=())
    return ServerView(info=ServerInfo.of(server), driver=None, status=status, error=None)


CONNECTION = ReplicaConnection(
    name="", master_address="127.0.0.1:7301", running=True, io_state=IoState.connected,
    sql_state=SqlState.applying, received_position="1-1-5", applied_position="1-1-5", master_position="1-1-5",
    lag={}, last_error=None,
)  # fmt: skip


def test_candidate_choice_excludes_a_replica_in_maintenance_and_takes_it_once_its_maintenance_ended() -> None:
    now = datetime.now(UTC)
    master = Server(
        id=1,
        cluster_id=1,
        name="m",
        host="h",
        protocol_port=7301,
        maintenance_set=False,
        labels={},
        promotion_rule=PromotionRule.neutral,
    )

    def replica(until: datetime) -> Link:
        server = Server(
            id=2, cluster_id=1, name="r", host="h", protocol_port=7302, maintenance_set=True,
            maintenance_owner="alice", maintenance_reason="disk swap", maintenance_until=until, labels={},
            promotion_rule=PromotionRule.neutral,
        )  # fmt: skip
        return Link(replica=view(server), master=view(master), connection=CONNECTION)

    ongoing = candidate_pool([replica(now + timedelta(minutes=5))], view(master), [])
    assert (ongoing.eligible, ongoing.excluded) == ([], {"r (server_id not read yet)": "it is in maintenance"})
    ended = candidate_pool([replica(now - timedelta(seconds=1))], view(master), [])
    assert [link.replica.info.id for link in ended.eligible] == [2] and ended.excluded == {}

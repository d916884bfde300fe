"""The lag history a chart reads: a range with more samples than the response may hold is downsampled per series and
time bucket (the bucket's last sample, with its lowest and highest seconds), so the newest sample is always in the
answer and a short spike still shows as a bucket's maximum; a range that fits is answered sample by sample."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
from fastapi import FastAPI
from sqlalchemy import text

from ferry_control.core.db import session_scope
from ferry_control.models import LagSample, LinkSource, PositionSample, ReplicationLink

DAY_S = 24 * 3600
#: What the dashboard's 24 h chart asks for (frontend/src/api/queries.ts).
CHART_LIMIT = 10_000


async def a_day_of_samples(app: FastAPI, client: httpx.AsyncClient, now: datetime) -> tuple[int, int]:
    """A cluster with one link whose lag was sampled every second for a day (one 30 s spike at noon); returns the
    cluster's and the link's ids."""
    cluster_id = (await client.post("/api/v1/clusters", json={"name": "day"})).json()["id"]
    ids = []
    for number in (1, 2):
        body = {"name": f"s{number}", "host": "127.0.0.1", "protocol_port": 7300 + number}
        response = await client.post(f"/api/v1/clusters/{cluster_id}/servers", json=body)
        ids.append(response.json()["id"])
    async with session_scope(app.state.sessionmaker) as session:
        link = ReplicationLink(cluster_id=cluster_id, replica_server_id=ids[1], master_server_id=ids[0], name="main",
                               source=LinkSource.replica, lag={})  # fmt: skip
        session.add(link)
        await session.flush()
        # Written by the database itself (generate_series): 86,400 rows sent as parameters cost the test process
        # several CPU-seconds each time, and what the test reads does not depend on how they were written.
        await session.execute(
            text(
                f"INSERT INTO {LagSample.__tablename__} (link_id, cluster_id, replica_server_id, master_server_id,"
                " connection, domain_id, transactions, seconds, sampled_at)"
                " SELECT :link, :cluster, :replica, :master, 'main', 1, s % 7,"
                " CASE WHEN s >= :spike AND s < :spike + 30 THEN 300.0 ELSE 0.1 + (s % 5) / 10.0 END,"
                " CAST(:start AS timestamptz) + make_interval(secs => s)"
                " FROM generate_series(0, :seconds - 1) AS s ORDER BY s"
            ),
            {"link": link.id, "cluster": cluster_id, "replica": ids[1], "master": ids[0], "spike": DAY_S // 2,
             "start": now - timedelta(seconds=DAY_S - 1), "seconds": DAY_S},
        )  # fmt: skip
        return cluster_id, link.id


async def test_a_day_of_samples_read_for_the_24_hour_chart_ends_with_the_newest(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    cluster_id, link_id = await a_day_of_samples(app, client, now)
    answer = await client.get(f"/api/v1/clusters/{cluster_id}/lag/history", params={
        "since": (now - timedelta(hours=24)).isoformat(), "until": now.isoformat(), "limit": CHART_LIMIT})  # fmt: skip
    assert answer.status_code == 200, answer.text
    history = answer.json()
    samples = history["samples"]
    assert history["truncated"] is True and history["bucket_s"] >= DAY_S // CHART_LIMIT, history["bucket_s"]
    assert 0 < len(samples) <= CHART_LIMIT
    newest = samples[-1]
    assert datetime.fromisoformat(newest["sampled_at"]) == now, "the newest sample is in the answer"
    assert newest["link_id"] == link_id and newest["transactions"] == (DAY_S - 1) % 7
    assert [s["sampled_at"] for s in samples] == sorted(s["sampled_at"] for s in samples), "oldest first"
    assert max(s["seconds_max"] for s in samples) == 300.0, "the noon spike shows as a bucket's maximum"
    assert min(s["seconds_min"] for s in samples) == 0.1

    # An hour of it fits: every sample, none downsampled.
    hour = await client.get(f"/api/v1/clusters/{cluster_id}/lag/history", params={
        "since": (now - timedelta(hours=1)).isoformat(), "until": now.isoformat(), "limit": CHART_LIMIT})  # fmt: skip
    body = hour.json()
    assert (body["truncated"], body["bucket_s"], len(body["samples"])) == (False, None, 3601)
    assert body["samples"][-1]["seconds_max"] is None


async def test_a_day_of_position_samples_read_with_a_small_limit_ends_with_the_newest(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """Positions are downsampled the same way: per server and domain the bucket's last sample with its lowest
    seq_no, the newest of each series in the answer, at most `limit` samples."""
    now = datetime.now(UTC).replace(microsecond=0)
    cluster_id = (await client.post("/api/v1/clusters", json={"name": "positions-day"})).json()["id"]
    server = await client.post(f"/api/v1/clusters/{cluster_id}/servers", json={
        "name": "s1", "host": "127.0.0.1", "protocol_port": 7301})  # fmt: skip
    server_id = server.json()["id"]
    start = now - timedelta(seconds=DAY_S - 1)
    async with session_scope(app.state.sessionmaker) as session:
        await session.execute(
            text(
                f"INSERT INTO {PositionSample.__tablename__} (server_id, domain_id, gtid, seq_no, sampled_at)"
                " SELECT :server, d, d || '-1-' || (s + 1), s + 1,"
                " CAST(:start AS timestamptz) + make_interval(secs => s)"
                " FROM generate_series(0, :seconds - 1, 2) AS s, (VALUES (1), (2)) AS domains (d) ORDER BY s, d"
            ),
            {"server": server_id, "start": start, "seconds": DAY_S},
        )
    answer = await client.get(f"/api/v1/clusters/{cluster_id}/positions/history", params={
        "since": (now - timedelta(hours=24)).isoformat(), "until": now.isoformat(), "limit": 1000})  # fmt: skip
    assert answer.status_code == 200, answer.text
    history = answer.json()
    samples = history["samples"]
    assert history["truncated"] is True and history["bucket_s"] >= DAY_S // 500, history["bucket_s"]
    assert 0 < len(samples) <= 1000
    newest = {s["domain_id"]: s for s in samples}
    assert {d: s["seq_no"] for d, s in newest.items()} == {1: DAY_S - 1, 2: DAY_S - 1}, "the newest of each series"
    assert all(s["seq_no_min"] <= s["seq_no"] for s in samples)
    assert samples[0]["seq_no_min"] == 1


async def test_a_link_s_lag_history_outlives_the_link(app: FastAPI, client: httpx.AsyncClient) -> None:
    """A replica promoted since (its link to the old master removed) keeps its lag history for the whole range,
    named as it was; it goes with its server."""
    now = datetime.now(UTC).replace(microsecond=0)
    cluster_id, link_id = await a_day_of_samples(app, client, now)
    since, until = (now - timedelta(minutes=5)).isoformat(), now.isoformat()
    before = (
        await client.get(f"/api/v1/clusters/{cluster_id}/lag/history", params={"since": since, "until": until})
    ).json()
    async with session_scope(app.state.sessionmaker) as session:
        link = await session.get(ReplicationLink, link_id)
        assert link is not None
        replica = link.replica_server_id
        await session.delete(link)
    after = (
        await client.get(f"/api/v1/clusters/{cluster_id}/lag/history", params={"since": since, "until": until})
    ).json()
    assert len(after["samples"]) == len(before["samples"]) == 301
    assert after["samples"] == before["samples"] and after["at_start"] == before["at_start"]
    assert {(s["link_id"], s["replica_registered_server_id"], s["connection"]) for s in after["samples"]} == {
        (link_id, replica, "main")
    }
    # Filtered by the replica: still there.
    only = await client.get(f"/api/v1/clusters/{cluster_id}/lag/history",
                            params={"since": since, "until": until,
                                    "replica_registered_server_id": replica})  # fmt: skip
    assert len(only.json()["samples"]) == 301
    # The server removed: its samples go with it.
    assert (await client.delete(f"/api/v1/clusters/{cluster_id}/servers/{replica}")).status_code == 204
    gone = (
        await client.get(f"/api/v1/clusters/{cluster_id}/lag/history", params={"since": since, "until": until})
    ).json()
    assert gone["samples"] == [] and gone["at_start"] == []

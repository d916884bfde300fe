"""One lag, one figure: a replica delayed on purpose, read at one moment (no collector cycle between the reads) from
every surface that shows lag — the clusters overview, the topology's edge, the positions matrix, the lag history
(its newest sample and the delay band) and `ferryctl` (`status` and `clusters list`, JSON and text) — gives the
same seconds, transactions, configured delay and words on each. Real ferryd nodes and the real CLI process; the
judgement itself (services/lag.py) is tested as a pure function."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from ferry_control.ctl.errors import ExitCode
from ferry_control.services.lag import judge, seconds_words, worst
from tests.cli.test_ferryctl import ferryctl
from tests.conftest import Tokens
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import register, serve
from tests.waiting import eventually

DELAY_S = 600  # far beyond the test: the writes wait unapplied for the whole test
VERDICT = ("seconds", "transactions", "delay_s", "beyond_delay_s", "level", "words")


def verdict(lag: dict[str, Any]) -> dict[str, Any]:
    return {key: lag[key] for key in VERDICT}


def test_the_judgement_against_the_configured_delay() -> None:
    assert judge(30.0, 445, 30).words == "30 s (delay 30 s, +0 s) · 445 txn"
    assert judge(30.0, 445, 30).level == "none", "at its delay: behind by design"
    assert (judge(42.4, 445, 30).beyond_delay_s, judge(42.4, 445, 30).level) == (12.4, "high")
    assert judge(29.0, 445, 30).beyond_delay_s == 0.0, "never below 0"
    assert judge(0.0, 0).words == "0 s · 0 txn" and judge(0.0, 0).level == "none"
    assert judge(4.25, 12).words == "4.2 s · 12 txn" and judge(4.25, 12).level == "low"
    assert judge(0.0, 1500).level == "high", "without a delay, transactions count"
    assert judge(-1.0, -3).words == "0 s · 0 txn", "never negative"
    assert [seconds_words(s) for s in (0.85, 185.0, 7380.0)] == ["850 ms", "3 min 05 s", "2 h 03 min"]
    # The worst: the most beyond the delay first; a delayed replica at its delay is not worse than one 3 s behind.
    assert worst([judge(30.0, 400, 30), judge(3.0, 2)]) == judge(3.0, 2)
    assert worst([judge(0.0, 0), judge(30.0, 400, 30)]) == judge(30.0, 400, 30)
    assert worst([]) is None


async def test_every_surface_reads_the_same_lag_at_one_moment(
    app: FastAPI, client: httpx.AsyncClient, tokens: Tokens, ferryd_factory: Callable[..., FerrydCluster],
    tmp_path: Path,
) -> None:  # fmt: skip
    ferryd = ferryd_factory()
    cluster_id, ids = await register(client, ferryd, name="one-truth")
    replica = ferryd.replica2
    replica.post("/v1/replication/main/stop", {})
    replica.post("/v1/replication/main/change-master", {"master": ferryd.master.listen, "delay_s": DELAY_S})
    replica.post("/v1/replication/main/start", {})
    ferryd.write(5)

    async def held() -> dict[str, Any] | None:
        await app.state.collector.run_cycle()
        edges = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["edges"]
        (edge,) = [
            e for e in edges if e["replica_registered_server_id"] == ids["replica2"] and e["source"] == "replica"
        ]
        lag = edge["lag"].get("1")
        return edge if lag and lag["transactions"] == 5 and lag["seconds"] > 0 else None

    await eventually("the delayed replica to hold the 5 writes, seconds behind", held)

    # One moment: no collector cycle between these reads.
    overview = {c["id"]: c for c in (await client.get("/api/v1/clusters/overview")).json()}[cluster_id]
    topology = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
    positions = (await client.get(f"/api/v1/clusters/{cluster_id}/positions")).json()
    history = (await client.get(f"/api/v1/clusters/{cluster_id}/lag/history")).json()
    async with serve(app) as url:
        status = await ferryctl(tmp_path, "status", "one-truth", "--output", "json", url=url, token=tokens.viewer)
        listed = await ferryctl(tmp_path, "clusters", "list", "--output", "json", url=url, token=tokens.viewer)
        text = await ferryctl(tmp_path, "clusters", "list", url=url, token=tokens.viewer, columns=200)
        status_text = await ferryctl(tmp_path, "status", "one-truth", url=url, token=tokens.viewer, columns=200)
    for run in (status, listed, text, status_text):
        assert run.code == ExitCode.ok, run.err

    (edge,) = [
        e
        for e in topology["edges"]
        if e["replica_registered_server_id"] == ids["replica2"] and e["source"] == "replica"
    ]
    truth = verdict(edge["lag"]["1"])
    assert truth["delay_s"] == DELAY_S and truth["level"] == "none" and truth["beyond_delay_s"] == 0.0
    assert truth["words"] == f"{seconds_words(truth['seconds'])} (delay 10 min 00 s, +0 s) · 5 txn"

    # The overview's worst lag is that connection's, named.
    assert verdict(overview["worst_lag"]) == truth
    assert overview["worst_lag"]["replica"].startswith("replica2") and overview["worst_lag"]["domain"] == 1
    # The positions matrix: the same verdict in the replica's cell.
    (row,) = [r for r in positions["rows"] if r["registered_server_id"] == ids["replica2"]]
    assert verdict(row["cells"]["1"]["lag"]) == truth and row["cells"]["1"]["lag_seconds"] == truth["seconds"]
    # The lag history: its newest sample of that series is the figure, and the delay band is the configured delay.
    series = [s for s in history["samples"] if s["link_id"] == edge["link_id"] and s["domain_id"] == 1]
    assert series, history
    assert (series[-1]["seconds"], series[-1]["transactions"]) == (truth["seconds"], truth["transactions"])
    assert [(d["link_id"], d["delay_s"]) for d in history["delays"]] == [(edge["link_id"], DELAY_S)]
    # ferryctl: the same words in status and clusters list, as JSON and as text.
    (line,) = [
        r for r in status.json()["lag"] if r["replica_registered_server_id"] == ids["replica2"] and r["domain"] == 1
    ]
    assert (line["lag"], line["seconds"], line["delay_s"], line["level"]) == (
        truth["words"],
        truth["seconds"],
        DELAY_S,
        "none",
    )
    (listed_cluster,) = [c for c in listed.json() if c["id"] == cluster_id]
    assert verdict(listed_cluster["worst_lag"]) == truth
    assert truth["words"] in text.out and truth["words"] in status_text.out

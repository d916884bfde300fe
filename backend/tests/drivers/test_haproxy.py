"""HAProxy in front of a cluster, with real HAProxy and ferryd processes: the configuration Ferry renders passes
`haproxy -c` and refuses a parameter that would add a line; the role endpoints answer 200 / 503 (a fenced old master
503); the writer frontend sends writes to the master only, and a switchover moves it on the proxy at once through
its admin socket; a failover with the admin socket unreachable completes and reports the proxy, which is brought in
line once it answers."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import update

from ferry_control.core.db import session_scope
from ferry_control.drivers.ferry_protocol import FerryProtocolClient, Increment
from ferry_control.models import Server
from ferry_control.services.haproxy.runtime import reader_backend, writer_backend
from tests.cli.test_ferryctl import ferryctl
from tests.conftest import Live, LiveFactory
from tests.ferryd_cluster import WAIT_S, FerrydCluster, free_port
from tests.haproxy_proxy import Haproxy
from tests.helpers import register, serve
from tests.mariadb_cluster import eventually


async def rendered(
    live: Live, cluster_id: int, api: str, socket_path: Path | str, **params: str
) -> tuple[str, str, str]:
    """The cluster's configuration with the writer and reader on free ports; returns it and the two addresses."""
    writer, reader = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    answer = await live.client.get(f"/api/v1/clusters/{cluster_id}/haproxy-config", params={
        "writer_bind": writer, "reader_bind": reader, "admin_socket": str(socket_path),
        "ferry_address": api.removeprefix("http://"), **params})  # fmt: skip
    assert answer.status_code == 200, answer.text
    return answer.text, writer, reader


@asynccontextmanager
async def proxied(
    live: Live, cluster_id: int, tmp_path: Path, socket_path: Path
) -> AsyncIterator[tuple[Haproxy, str, str]]:
    """The API on a real port, and a HAProxy rendered for the cluster and started; stopped after."""
    async with serve(live.app) as api:
        config, writer, reader = await rendered(live, cluster_id, api, socket_path)
        proxy = Haproxy(tmp_path / "haproxy", config, live.tokens.viewer)
        try:
            proxy.start()
            yield proxy, writer, reader
        finally:
            proxy.stop()


async def write_through(address: str, key: str) -> int:
    """One increment through the proxy's writer frontend; returns the server id the GTID names."""
    async with await FerryProtocolClient.connect(address) as client:
        committed = await client.transact([Increment("proxied", key, "n")])
    return int(committed.gtid.split("-")[1])


async def test_the_rendered_configuration_passes_haproxy_check_and_refuses_a_line_of_its_own(
    live_app: LiveFactory, ferryd: FerrydCluster, tmp_path: Path
) -> None:
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        config, _, _ = await rendered(live, cluster_id, "http://127.0.0.1:8000", tmp_path / "admin.sock")
        checked = Haproxy(tmp_path, config, live.tokens.viewer).check()
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "uri-lf /api/v1/roles/%[srv_name]/writer" in config and "${FERRY_CHECK_TOKEN}" in config
        assert live.tokens.viewer not in config, "no secret in the file"
        for server_id in ids.values():
            assert f"server s{server_id} " in config
        tcp, _, _ = await rendered(live, cluster_id, "http://127.0.0.1:8000", "0.0.0.0:9999")
        assert "stats socket ipv4@0.0.0.0:9999 level admin" in tcp, "a TCP admin socket, for a proxy in a container"
        checked_tcp = Haproxy(tmp_path / "tcp", tcp, live.tokens.viewer).check()
        assert checked_tcp.returncode == 0, checked_tcp.stdout + checked_tcp.stderr
        for name, value in (("writer_bind", "127.0.0.1:1\nlisten evil"), ("admin_socket", "/tmp/x\n  stats"),
                            ("ferry_address", "host:99999")):  # fmt: skip
            refused = await live.client.get(f"/api/v1/clusters/{cluster_id}/haproxy-config", params={name: value})
            assert refused.status_code == 422, (name, refused.text)
            assert name in refused.json()["error"]["message"]


async def test_the_check_interval_is_the_callers_within_bounds_and_readers_are_asked_at_most_once_a_second(
    live_app: LiveFactory, ferryd: FerrydCluster, tmp_path: Path
) -> None:
    """Every check is a request to the API: an operator with many proxies asks less often."""
    async with live_app() as live:
        cluster_id, _ = await register(live.client, ferryd)
        url = f"/api/v1/clusters/{cluster_id}/haproxy-config"
        base = {"ferry_address": "127.0.0.1:8000", "admin_socket": str(tmp_path / "admin.sock")}

        def intervals(config: str) -> tuple[set[str], set[str]]:
            """The `inter` of the writer backend's servers, and of the reader backend's."""
            writer = config.split(f"\nbackend {writer_backend(cluster_id)}\n")[1].split("\n\n")[0]
            reader = config.split(f"\nbackend {reader_backend(cluster_id)}\n")[1].split("\n\n")[0]
            return set(re.findall(r"inter (\d+ms)", writer)), set(re.findall(r"inter (\d+ms)", reader))

        default = await live.client.get(url, params=base)
        assert default.status_code == 200, default.text
        assert intervals(default.text) == ({"250ms"}, {"1000ms"})
        slower = await live.client.get(url, params={**base, "check_interval_ms": 2000})
        assert slower.status_code == 200, slower.text
        assert intervals(slower.text) == ({"2000ms"}, {"2000ms"})
        checked = Haproxy(tmp_path, slower.text, live.tokens.viewer).check()
        assert checked.returncode == 0, checked.stdout + checked.stderr
        for value in (99, 60001, "soon"):
            refused = await live.client.get(url, params={**base, "check_interval_ms": value})
            assert refused.status_code == 422, (value, refused.text)
            assert "check_interval_ms" in refused.json()["error"]["message"]


async def test_role_endpoints_answer_200_for_the_role_and_503_naming_why(
    live_app: LiveFactory, ferryd: FerrydCluster
) -> None:
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        await live.app.state.collector.run_cycle()
        viewer = {"Authorization": f"Bearer {live.tokens.viewer}"}
        writer = await live.client.get(f"/api/v1/roles/s{ids['master']}/writer", headers=viewer)
        assert writer.status_code == 200 and writer.json()["role"] == "writer", writer.text
        not_writer = await live.client.get(f"/api/v1/roles/{ids['replica1']}/writer", headers=viewer)
        assert not_writer.status_code == 503 and not_writer.json()["error"]["code"] == "not_writer"
        assert "replica1" in not_writer.json()["error"]["message"]
        reader = await live.client.get(f"/api/v1/roles/s{ids['replica2']}/reader", headers=viewer)
        assert reader.status_code == 200, reader.text
        assert (await live.client.get(f"/api/v1/roles/s{ids['master']}/reader", headers=viewer)).status_code == 503
        assert (await live.client.get("/api/v1/roles/s999/writer", headers=viewer)).status_code == 503
        assert (await live.client.get("/api/v1/roles/x1/writer", headers=viewer)).status_code == 422
        assert (
            await live.client.get(f"/api/v1/roles/s{ids['master']}/writer", headers={"Authorization": ""})
        ).status_code == 401
        async with session_scope(live.app.state.sessionmaker) as session:  # as a failover leaves an old master
            await session.execute(update(Server).where(Server.id == ids["master"]).values(fenced=True))
        fenced = await live.client.get(f"/api/v1/roles/s{ids['master']}/writer", headers=viewer)
        assert fenced.status_code == 503 and "fenced" in fenced.json()["error"]["message"]


async def test_a_switchover_moves_the_proxys_writer_at_once(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    socket_path = tmp_path / "admin.sock"
    async with live_app(haproxy_admin_sockets=[str(socket_path)]) as live:
        cluster_id, ids = await register(live.client, ferryd)
        await live.app.state.collector.run_cycle()
        async with proxied(live, cluster_id, tmp_path, socket_path) as (proxy, writer, _):
            backend = f"ferry_{cluster_id}_writer"
            master, candidate = f"s{ids['master']}", f"s{ids['replica1']}"

            def only_master_up() -> bool:
                return [s for s, status in proxy.stat(backend).items() if status.startswith("UP")] == [master]

            await eventually("the proxy's checks to find the master, and only it", only_master_up)
            assert await write_through(writer, "k") == ferryd.master.server_id

            started = await live.client.post(f"/api/v1/clusters/{cluster_id}/operations/switchover",
                                             json={"candidate_registered_server_id": ids["replica1"]})  # fmt: skip
            assert started.status_code == 202, started.text
            async with asyncio.timeout(WAIT_S):
                await live.app.state.runner.wait(started.json()["id"])
            at_once = proxy.stat(backend)  # no check interval waited for
            operation = await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{started.json()['id']}")
            result = operation.json()["result"]
            assert operation.json()["state"] == "succeeded", operation.json()["error"]
            assert at_once[candidate].startswith("UP") and at_once[master].split()[0] in ("DRAIN", "DOWN"), at_once
            assert {p["ok"] for p in result["proxies"]} == {True} and len(result["proxies"]) == 2, result["proxies"]
            assert await write_through(writer, "k") == ferryd.replica1.server_id, "writes go to the new master"

            # Before any poll saw the new topology, the role checks follow the operation (else the proxy's checks
            # would mark the new master down again until the next poll).
            viewer = {"Authorization": f"Bearer {live.tokens.viewer}"}

            async def roles_followed() -> bool:
                new = await live.client.get(f"/api/v1/roles/{candidate}/writer", headers=viewer)
                old = await live.client.get(f"/api/v1/roles/{master}/writer", headers=viewer)
                return new.status_code == 200 and old.status_code == 503

            await eventually("the writer checks to follow the switchover without a poll", roles_followed)

            [seen] = (await live.client.get(f"/api/v1/clusters/{cluster_id}/proxies")).json()
            assert (seen["proxy"], seen["reachable"], seen["writer_addresses"]) == (str(socket_path), True, [writer])
            assert seen["writer_registered_server_id"] == ids["replica1"] and len(seen["reader_addresses"]) == 1
            assert {s["registered_server_id"] for s in seen["servers"]} == set(ids.values())


async def test_a_failover_with_the_proxy_unreachable_completes_reports_it_and_the_proxy_is_brought_in_line(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    socket_path = tmp_path / "admin.sock"  # nothing listens there during the failover
    async with live_app(haproxy_admin_sockets=[str(socket_path)], unreachable_after_failures=1) as live:
        cluster_id, ids = await register(live.client, ferryd)
        await live.app.state.collector.run_cycle()
        ferryd.master.kill()
        await live.app.state.collector.run_cycle()
        started = await live.client.post(f"/api/v1/clusters/{cluster_id}/operations/failover", json={})
        assert started.status_code == 202, started.text
        async with asyncio.timeout(WAIT_S):
            await live.app.state.runner.wait(started.json()["id"])
        operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{started.json()['id']}")).json()
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        unreached = operation["result"]["proxies"]
        assert unreached and all(not p["ok"] and "cannot reach" in p["error"] for p in unreached), unreached
        [unread] = (await live.client.get(f"/api/v1/clusters/{cluster_id}/proxies")).json()
        assert unread["reachable"] is False and "cannot read the admin socket" in unread["error"], unread
        new_master = next(s for s in (ferryd.replica1, ferryd.replica2) if s.status()["read_only"] is False)
        new_id = next(i for name, i in ids.items() if name != "master" and getattr(ferryd, name) is new_master)

        async with proxied(live, cluster_id, tmp_path, socket_path) as (proxy, writer, _):
            backend = f"ferry_{cluster_id}_writer"
            proxy.command(f"set server {backend}/s{new_id} state maint")  # as a proxy that missed the move may be
            await live.app.state.collector.run_cycle()
            for hook in live.app.state.collector.after_cycle:
                await hook(None)
            assert proxy.stat(backend)[f"s{new_id}"] != "MAINT", "brought in line after the next cycle"
            assert live.app.state.runner.stale_proxies.pairs == set()
            await eventually("the proxy to send writes to the new master",
                             lambda: proxy.stat(backend).get(f"s{new_id}") == "UP")  # fmt: skip
            assert await write_through(writer, "after") == new_master.server_id


async def test_ferryctl_renders_the_configuration_and_shows_the_proxies(
    live_app: LiveFactory, ferryd: FerrydCluster, tmp_path: Path
) -> None:
    socket_path = tmp_path / "admin.sock"
    async with live_app(haproxy_admin_sockets=[str(socket_path)]) as live:
        cluster_id, _ = await register(live.client, ferryd, name="orders")
        async with serve(live.app) as url:
            out = tmp_path / "orders.cfg"
            rendered_run = await ferryctl(tmp_path, "haproxy-config", "orders", "--writer-bind", "127.0.0.1:3400",
                                          "--admin-socket", str(socket_path), "--out", str(out), url=url,
                                          token=live.tokens.viewer)  # fmt: skip
            assert rendered_run.code == 0, rendered_run.err
            config = out.read_text()
            assert "bind 127.0.0.1:3400" in config and f"addr 127.0.0.1 port {url.rsplit(':', 1)[1]}" in config
            checked = Haproxy(tmp_path / "checked", config, live.tokens.viewer).check()
            assert checked.returncode == 0, checked.stdout + checked.stderr
            shown = await ferryctl(tmp_path, "proxies", "orders", "--output", "json", url=url, token=live.tokens.viewer)
            assert shown.code == 0, shown.err
            [proxy] = shown.json()["proxies"]
            assert proxy["proxy"] == str(socket_path) and proxy["reachable"] is False, "nothing listens there yet"
        assert cluster_id == shown.json()["cluster"]["id"]

"""`ferryctl` as scripts run it: its own process (.venv/bin/ferryctl) talking over a real socket to the live app
(served by uvicorn on a loopback port) and real ferryd nodes. `status` as JSON (a position per server and domain,
lag per link and domain), a `switchover --wait` that succeeds and one its preflight refuses (exit 3, the failing
check named), `skip` of the transaction that stopped a replica (the GTID and the data lost said; a running
connection refused), and the exit codes of a bad token, a role that is not enough, a missing cluster or operation,
an API that is not there and bad usage — each with the API's message, never a traceback."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ferry_control.ctl import config
from ferry_control.ctl.errors import CtlError, ExitCode
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster, free_port
from tests.helpers import WAIT_S, connection, register, serve, stop_on_strict_mode, writable_master
from tests.waiting import eventually

FERRYCTL = Path(sys.executable).with_name("ferryctl")


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


async def ferryctl(
    tmp_path: Path, *args: str, url: str | None = None, token: str | None = None, columns: int = 200
) -> Run:
    """Runs ferryctl with a clean environment: no FERRY_* variables, no config file but what `args` name; a terminal
    `columns` wide."""
    assert FERRYCTL.is_file(), f"{FERRYCTL} is missing: pip install -e backend (it installs the console script)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FERRY")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), COLUMNS=str(columns))
    if url is not None:
        env["FERRY_URL"] = url
    if token is not None:
        env["FERRY_TOKEN"] = token
    process = await asyncio.create_subprocess_exec(
        str(FERRYCTL), *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(WAIT_S):
        out, err = await process.communicate()
    assert process.returncode is not None
    run = Run(process.returncode, out.decode(), err.decode())
    assert "Traceback" not in run.err, run.err
    return run


@pytest.mark.long
async def test_status_then_switchover_with_wait(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(3, domains=(1, 2))
    ferryd.converge()
    async with live_app(collector_enabled=True, poll_interval_s=0.2) as live:
        cluster_id, ids = await register(live.client, ferryd, name="orders")

        async def positions_known() -> bool:
            matrix = (await live.client.get(f"/api/v1/clusters/{cluster_id}/positions")).json()
            edges = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["edges"]
            cells = [row["cells"].get(str(d), {}).get("gtid") for row in matrix["rows"] for d in (1, 2)]
            return len(matrix["rows"]) == 3 and all(cells) and len(edges) == 2

        await eventually("the collector to store every server's position and both links", positions_known, WAIT_S)
        async with serve(live.app) as url:
            run = await ferryctl(tmp_path, "status", "orders", "--output", "json", url=url, token=live.tokens.viewer)
            assert run.code == ExitCode.ok, run.err
            status = run.json()
            assert status["cluster"]["id"] == cluster_id
            rows = {row["name"]: row for row in status["positions"]["rows"]}
            assert set(rows) == {"master", "replica1", "replica2"}
            assert status["positions"]["domains"] == [1, 2]
            for row in rows.values():
                for domain in ("1", "2"):
                    cell = row["cells"][domain]
                    assert cell["gtid"].startswith(f"{domain}-") and cell["seq_no"] >= 3, row
            roles = {node["name"]: node["role"] for node in status["topology"]["nodes"]}
            assert roles == {"master": "master", "replica1": "replica", "replica2": "replica"}
            assert {(lag["replica"], lag["master"], lag["domain"]) for lag in status["lag"]} == {
                (replica, "master", domain) for replica in ("replica1", "replica2") for domain in (1, 2)
            }

            # The same for people: the matrix has a column per domain.
            text = await ferryctl(tmp_path, "--url", url, "--token", live.tokens.viewer, "status", str(cluster_id))
            assert text.code == ExitCode.ok, text.err
            assert "domain 1" in text.out and "domain 2" in text.out and "replica2" in text.out

            # Switchover to a replica named by name, following the steps to the end.
            run = await ferryctl(
                tmp_path, "switchover", "orders", "--to", "replica1", "--wait", "--output", "json",
                url=url, token=live.tokens.operator,
            )  # fmt: skip
            assert run.code == ExitCode.ok, (run.out, run.err)
            operation = run.json()
            assert operation["type"] == "switchover" and operation["state"] == "succeeded"
            assert operation["result"]["new_master_registered_server_id"] == ids["replica1"]
            assert operation["result"]["old_master_registered_server_id"] == ids["master"]
            # The live progress went to stderr, beside the JSON document: each step as it finished.
            assert "✓ preflight" in run.err and "✓ promote_candidate" in run.err
            assert writable_master(ferryd.nodes) is ferryd.replica1

            # A drill run now, followed to its outcome; then its history.
            run = await ferryctl(
                tmp_path, "drills", "run", "orders", "--switch-back", "--wait", "-o", "json",
                url=url, token=live.tokens.operator,
            )  # fmt: skip
            assert run.code == ExitCode.ok, (run.out, run.err)
            drill = run.json()
            assert drill["state"] == "passed" and drill["passed"] is True, drill
            history = await ferryctl(
                tmp_path, "drills", "history", "orders", "-o", "json", url=url, token=live.tokens.viewer
            )
            assert [r["id"] for r in history.json()] == [drill["id"]]

            listed = await ferryctl(
                tmp_path, "operations", "list", "orders", "-o", "json", url=url, token=live.tokens.viewer
            )
            assert [o["type"] for o in listed.json()] == ["drill", "switchover"]
            assert listed.json()[1]["id"] == operation["id"]

            # At 80 columns every command's text fits: no line longer, no value split across lines — each position's
            # GTIDs whole.
            status = (
                await ferryctl(tmp_path, "status", "orders", "-o", "json", url=url, token=live.tokens.viewer)
            ).json()
            gtids = {
                cell["gtid"] for row in status["positions"]["rows"] for cell in row["cells"].values() if cell["gtid"]
            }
            narrow = await ferryctl(tmp_path, "status", "orders", url=url, token=live.tokens.viewer, columns=80)
            assert gtids and all(gtid in narrow.out for gtid in gtids), (gtids, narrow.out)
            for command in (("status", "orders"), ("clusters", "list"), ("servers", "list", "orders"),
                            ("operations", "list", "orders"), ("operations", "show", "orders", str(operation["id"])),
                            ("drills", "history", "orders")):  # fmt: skip
                narrow = await ferryctl(tmp_path, *command, url=url, token=live.tokens.viewer, columns=80)
                assert narrow.code == ExitCode.ok, (command, narrow.err)
                printed = narrow.out.splitlines()
                assert printed and all(len(line) <= 80 for line in printed), (command, narrow.out)
                for name in ("master", "replica1", "replica2", "orders"):  # never broken over two lines
                    for first, second in itertools.pairwise(printed):
                        assert not any(
                            first.rstrip().endswith(name[:k]) and second.lstrip(" │").startswith(name[k:])
                            for k in range(2, len(name) - 1)
                        ), (command, name, narrow.out)


async def test_switchover_refused_by_preflight_names_the_check(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd, name="orders")
        ferryd.replica1.post("/v1/replication/main/stop", {})
        async with serve(live.app) as url:
            run = await ferryctl(
                tmp_path, "switchover", "orders", "--to", "replica1", "--wait", url=url, token=live.tokens.operator
            )
            assert run.code == ExitCode.refused, (run.out, run.err)
            assert "refused by preflight" in run.err
            assert "check candidate_replicating failed" in run.err and "running=False" in run.err
            assert "✗ preflight" in run.out

            # As JSON: the operation as it ended is the document; the exit code says refused.
            run = await ferryctl(
                tmp_path, "switchover", "orders", "--to", str(ids["replica1"]), "--dry-run", "--wait", "-o", "json",
                url=url, token=live.tokens.operator,
            )  # fmt: skip
            assert run.code == ExitCode.refused, (run.out, run.err)
            operation = run.json()
            assert operation["dry_run"] is True and operation["state"] == "failed"
            failed = [c["name"] for c in operation["result"]["checks"] if not c["passed"]]
            assert failed == ["candidate_replicating"]
            assert writable_master(ferryd.nodes) is ferryd.master

            # A failover while the master answers is refused by its check step, like a preflight.
            run = await ferryctl(tmp_path, "failover", "orders", "--wait", url=url, token=live.tokens.operator)
            assert run.code == ExitCode.refused, (run.out, run.err)
            assert "✗ confirm_master_lost" in run.out and "refused" in run.err
            # Nothing to acknowledge: the API's conflict and its message.
            run = await ferryctl(tmp_path, "ack-failover", "orders", url=url, token=live.tokens.operator)
            assert run.code == ExitCode.error and "no failover to acknowledge" in run.err, run.err

            # An errant GTID: a transaction written on replica2 itself (server_id 3), which the master never had.
            errant = ferryd.replica2.increment("local_write", "k", domain=1)
            assert errant.startswith("1-3-")
            run = await ferryctl(
                tmp_path, "switchover", "orders", "--to", "replica2", "--wait", url=url, token=live.tokens.operator
            )
            assert run.code == ExitCode.refused, (run.out, run.err)
            assert f"check no_errant_gtids failed: domain 1: {errant}: " in run.err, run.err
            own = "written by the candidate itself (server_id 3); the master's newest from that server in domain 1"
            own += " is none"
            assert own in run.err, run.err
            assert writable_master(ferryd.nodes) is ferryd.master
        statuses = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
        assert [(o["type"], o["state"]) for o in statuses] == [
            ("switchover", "failed"),
            ("failover", "failed"),
            ("switchover", "failed"),
            ("switchover", "failed"),
        ]


async def test_skip_names_the_skipped_gtid_and_the_data_lost_and_refuses_a_running_connection(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory()
    failing = await stop_on_strict_mode(ferryd)
    async with live_app() as live:
        await register(live.client, ferryd, name="orders")
        async with serve(live.app) as url:
            token = live.tokens.operator
            running = await ferryctl(tmp_path, "skip", "orders", "replica2", "-o", "json", url=url, token=token)
            assert running.code == ExitCode.error, (running.out, running.err)
            assert running.json()["error"]["code"] == "connection_running" and "is running" in running.err
            unknown = await ferryctl(tmp_path, "skip", "orders", "replica1", "other", url=url, token=token)
            assert unknown.code == ExitCode.not_found and "no replication connection 'other'" in unknown.err
            bad = await ferryctl(tmp_path, "skip", "orders", "replica1", "--count", "101", url=url, token=token)
            assert bad.code == ExitCode.usage and "101 is not in the range 1<=x<=100" in bad.err, bad.err

            run = await ferryctl(
                tmp_path, "skip", "orders", "replica1", "main", "--count", "1", "--wait", url=url, token=token
            )
            assert run.code == ExitCode.ok, (run.out, run.err)
            assert "skip_transactions" in run.out and failing in run.out, run.out
            assert "never bring it back" in " ".join(run.out.split()), run.out
            shown = await ferryctl(tmp_path, "operations", "list", "orders", "-o", "json", url=url, token=token)
            [operation] = shown.json()
            assert (operation["type"], operation["state"], operation["result"]["skipped_gtids"]) == (
                "skip_transactions", "succeeded", [failing],
            )  # fmt: skip
    assert connection(ferryd.replica1)["running"] is True and connection(ferryd.replica2)["skip_counter"] == 0


async def test_exit_codes_and_messages(live_app: LiveFactory, tmp_path: Path) -> None:
    async with live_app() as live:
        async with serve(live.app) as url:
            operator, viewer, admin = live.tokens.operator, live.tokens.viewer, live.tokens.admin

            # A config file names the API and the token; flags and FERRY_* win over it.
            config = tmp_path / "ferryctl.toml"
            config.write_text(f'url = "{url}"\ntoken = "{operator}"\n')
            created = await ferryctl(tmp_path, "--config", str(config), "clusters", "add", "orders", "-o", "json")
            assert created.code == ExitCode.ok, created.err
            assert created.json()["name"] == "orders"
            shown = await ferryctl(tmp_path, "--config", str(config), "clusters", "show", "orders", "-o", "json")
            assert shown.json() == {"cluster": created.json(), "servers": []}

            # Auth: an unknown token (401) and a role that is not enough (403), each with the API's message.
            run = await ferryctl(tmp_path, "clusters", "list", url=url, token="ferry_not-a-real-token")
            assert run.code == ExitCode.auth and "error:" in run.err, run.err
            run = await ferryctl(tmp_path, "clusters", "list", "-o", "json", url=url)
            assert run.code == ExitCode.auth
            assert run.json()["error"]["status"] == 401
            run = await ferryctl(tmp_path, "tokens", "list", url=url, token=operator)
            assert run.code == ExitCode.auth and "this needs admin" in run.err, run.err
            run = await ferryctl(tmp_path, "--token", admin, "tokens", "list", "-o", "json", url=url, token=viewer)
            assert run.code == ExitCode.ok and {t["name"] for t in run.json()} >= {"live-admin", "live-viewer"}

            # Not found: a cluster by name (resolved here), an operation (the API's 404 and message).
            run = await ferryctl(tmp_path, "status", "nosuch", url=url, token=viewer)
            assert run.code == ExitCode.not_found and "no cluster named 'nosuch'" in run.err, run.err
            run = await ferryctl(tmp_path, "operations", "show", "orders", "999", "-o", "json", url=url, token=viewer)
            assert run.code == ExitCode.not_found
            error = run.json()["error"]
            assert error["status"] == 404 and error["code"].endswith("not_found") and "999" in error["message"]
            assert error["message"] in run.err

            # The API's refusal of a bad value is bad usage; so is a wrong flag.
            run = await ferryctl(tmp_path, "clusters", "add", "no spaces allowed", url=url, token=operator)
            assert run.code == ExitCode.usage and "name" in run.err, run.err
            run = await ferryctl(tmp_path, "switchover", "orders", "--no-such-flag", url=url, token=operator)
            assert run.code == ExitCode.usage

        # Nothing listens there.
        unreachable = f"http://127.0.0.1:{free_port()}"
        run = await ferryctl(tmp_path, "clusters", "list", "-o", "json", url=unreachable, token=viewer)
        assert run.code == ExitCode.unreachable
        assert run.json()["error"]["code"] == "unreachable" and "cannot reach the API" in run.err

    # `--help` documents the exit codes.
    run = await ferryctl(tmp_path, "--help")
    assert run.code == ExitCode.ok
    assert "3  refused by preflight" in run.out and "7  the API is unreachable" in run.out


def test_settings_come_from_flags_then_environment_then_file(tmp_path: Path) -> None:
    file = tmp_path / "ferryctl.toml"
    (tmp_path / "token").write_text("ferry_from-token-file\n")
    file.write_text(f'url = "http://file:1"\ntoken_file = "{tmp_path / "token"}"\ntimeout_s = 3\n')
    assert config.load(config_path=str(file), environ={}) == config.Config("http://file:1", "ferry_from-token-file", 3)
    env = {"FERRY_URL": "http://env:2/", "FERRY_TOKEN": "ferry_env", "FERRY_CONFIG": str(file)}
    assert config.load(environ=env) == config.Config("http://env:2", "ferry_env", 3)
    assert config.load("http://flag:3", "ferry_flag", None, 5, environ=env) == config.Config(
        "http://flag:3", "ferry_flag", 5
    )
    # No file named and none at the default place: the defaults.
    home = {"XDG_CONFIG_HOME": str(tmp_path / "empty")}
    assert config.load(environ=home) == config.Config(config.DEFAULT_URL, None, config.DEFAULT_TIMEOUT_S)
    # A named file that is missing, or has keys ferryctl does not know, is bad usage.
    (tmp_path / "unknown.toml").write_text('url = "http://x:1"\npassword = "p"\n')
    for bad in (tmp_path / "missing.toml", tmp_path / "unknown.toml"):
        with pytest.raises(CtlError) as refused:
            config.load(config_path=str(bad), environ={})
        assert refused.value.exit_code == ExitCode.usage and str(bad) in refused.value.message


async def test_lists_say_when_they_are_empty_and_clusters_list_shows_health_masters_and_lag(
    live_app: LiveFactory, ferryd: FerrydCluster, tmp_path: Path
) -> None:
    async with live_app() as live:
        async with serve(live.app) as url:
            token = live.tokens.viewer
            run = await ferryctl(tmp_path, "clusters", "list", url=url, token=token)
            assert run.code == 0 and "no clusters yet" in run.out, (run.out, run.err)
            await register(live.client, ferryd, name="orders")
            ferryd.converge()
            # Replicas read-only, as a deployment keeps them (a writable replica is a problem of its own); the
            # session's nodes are given back as they were.
            for replica in (ferryd.replica1, ferryd.replica2):
                replica.post("/v1/read-only", {"read_only": True})
            try:
                await live.app.state.collector.run_cycle()
            finally:
                for replica in (ferryd.replica1, ferryd.replica2):
                    replica.post("/v1/read-only", {"read_only": False})
            run = await ferryctl(tmp_path, "operations", "list", "orders", url=url, token=token)
            assert run.code == 0 and "no operations on orders yet" in run.out, (run.out, run.err)
            run = await ferryctl(tmp_path, "clusters", "list", url=url, token=token)
            assert run.code == 0, run.err
            line = next(line for line in run.out.splitlines() if "orders" in line)
            assert "healthy" in line and "master" in line and " s · " in line and " txn" in line, run.out
            listed = (await ferryctl(tmp_path, "clusters", "list", "-o", "json", url=url, token=token)).json()
            assert listed[0]["name"] == "orders" and listed[0]["health"] == "healthy" and listed[0]["masters"]


async def test_servers_maintenance_starts_with_a_reason_and_an_end_shows_them_and_ends(
    live_app: LiveFactory, tmp_path: Path
) -> None:
    async with live_app() as live:
        async with serve(live.app) as url:
            operator, viewer = live.tokens.operator, live.tokens.viewer
            assert (await ferryctl(tmp_path, "clusters", "add", "shop", url=url, token=operator)).code == ExitCode.ok
            added = await ferryctl(tmp_path, "servers", "add", "shop", "--name", "db2", "--host", "10.0.0.2",
                                   "--protocol-port", "7302", url=url, token=operator)  # fmt: skip
            assert added.code == ExitCode.ok, added.err

            run = await ferryctl(
                tmp_path, "servers", "maintenance", "shop", "db2", "--for", "2h", url=url, token=operator
            )
            assert run.code == ExitCode.usage and "takes a reason" in run.err, run.err
            start = ("servers", "maintenance", "shop", "db2", "--reason", "disk swap", "--for")
            run = await ferryctl(tmp_path, *start, "2h", url=url, token=viewer)
            assert run.code == ExitCode.auth and "this needs operator" in run.err, run.err
            run = await ferryctl(tmp_path, *start, "8d", url=url, token=operator)
            assert run.code == ExitCode.usage and "longer than the longest maintenance" in run.err, run.err

            run = await ferryctl(tmp_path, *start, "2h", url=url, token=operator)
            assert run.code == ExitCode.ok, run.err
            assert "db2 (server_id not read yet): maintenance yes: disk swap (live-operator, until " in run.out, run.out
            listed = await ferryctl(tmp_path, "servers", "list", "shop", url=url, token=viewer)
            assert "disk swap" in listed.out and "live-operator" in listed.out, listed.out

            run = await ferryctl(tmp_path, "servers", "maintenance", "shop", "db2", "--end", url=url, token=operator)
            assert run.code == ExitCode.ok and run.out.strip().endswith("maintenance no"), run.out

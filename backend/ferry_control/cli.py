"""Command line of the control plane.

python -m ferry_control.cli migrate                                  upgrade the database to the newest schema
python -m ferry_control.cli create-token --name admin --role admin [--expires-in-days 90]
                                                                     create an API token and print it (once)
python -m ferry_control.cli generate-secret-key                      print a new key for FERRY_SECRET_KEYS
python -m ferry_control.cli rotate-secrets                           re-encrypt every stored secret under the
                                                                     first key of FERRY_SECRET_KEYS (docs/security.md)
python -m ferry_control.cli bootstrap --cluster local \
    --node node1=127.0.0.1:7301,http://127.0.0.1:7401 --node node2=… --node node3=… [--wait-s 60]
        wait for the nodes' admin APIs, make nodes 2..N read-only replicas of node 1 when no node replicates yet,
        and register the cluster and its servers when no cluster of that name exists; prints what it does on
        stderr and the cluster's id on stdout (ferry_control/bootstrap.py)
FERRY_DB_PASSWORD=… FERRY_REPLICATION_PASSWORD=… python -m ferry_control.cli register --cluster demo \
    --seed 127.0.0.1:3306 --db-user ferry --replication-user ferry_repl [--kind mariadb] [--tls-ca-file ca.pem]
        wait for the seed server, register the cluster with its logins (stored encrypted; an existing cluster of
        that name gets these logins) and discover its servers from the seed; prints what it does on stderr and the
        cluster's id on stdout (ferry_control/registration.py). Passwords come from the environment only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ferry_control.core.config import get_settings
from ferry_control.core.db import create_engine, create_sessionmaker, session_scope
from ferry_control.core.migrate import upgrade
from ferry_control.core.security import Role
from ferry_control.services.tokens import TokenService


async def _create_token(name: str, role: Role, expires_in_days: float | None = None) -> str:
    settings = get_settings()
    engine = create_engine(settings)
    expires_at = None if expires_in_days is None else datetime.now(UTC) + timedelta(days=expires_in_days)
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            _, token = await TokenService(session, settings).create(name, role, expires_at)
        return token
    finally:
        await engine.dispose()


async def _rotate_secrets() -> int:
    from ferry_control.core.secrets import SecretBox
    from ferry_control.services.clusters import ClusterService

    settings = get_settings()
    engine = create_engine(settings)
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            return await ClusterService(session, settings, SecretBox.from_settings(settings)).rotate_secrets()
    finally:
        await engine.dispose()


async def _bootstrap(args: argparse.Namespace) -> int:
    from ferry_control.bootstrap import bootstrap, parse_node

    nodes = [parse_node(text) for text in args.node]
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    return await bootstrap(get_settings(), args.cluster, args.description, nodes, args.wait_s, say)


async def _register(args: argparse.Namespace) -> int:
    from ferry_control.models import ServerKind
    from ferry_control.registration import Logins, RegistrationError, parse_seed, register

    db_password = os.environ.get("FERRY_DB_PASSWORD")
    if not db_password:
        raise RegistrationError("FERRY_DB_PASSWORD is not set: the database login's password comes from there")
    replication_password = os.environ.get("FERRY_REPLICATION_PASSWORD") or None
    if args.replication_user and not replication_password:
        raise RegistrationError("--replication-user needs FERRY_REPLICATION_PASSWORD")
    try:
        tls_ca = Path(args.tls_ca_file).read_text() if args.tls_ca_file else None
    except OSError as e:
        raise RegistrationError(f"--tls-ca-file: {e}") from e
    logins = Logins(args.db_user, db_password, args.replication_user, replication_password, tls_ca)
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    return await register(
        get_settings(), cluster=args.cluster, description=args.description, kind=ServerKind(args.kind),
        seed=parse_seed(args.seed), logins=logins, wait_s=args.wait_s, say=say,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ferry_control.cli", description="Ferry control plane")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("migrate", help="upgrade the database (DATABASE_URL, else the SQLite default) to head")
    create = commands.add_parser("create-token", help="create an API token and print it; it is not shown again")
    create.add_argument("--name", required=True)
    create.add_argument("--role", required=True, choices=[r.value for r in Role])
    create.add_argument("--expires-in-days", type=float, help="the token stops working after this many days")
    commands.add_parser("generate-secret-key", help="print a new Fernet key for FERRY_SECRET_KEYS")
    commands.add_parser(
        "rotate-secrets",
        help="re-encrypt every stored secret under the first key of FERRY_SECRET_KEYS (the others still decrypt)",
    )
    boot = commands.add_parser(
        "bootstrap",
        help="wire fresh nodes into a replicated cluster (node 1 the master) and register it; safe to repeat",
        description="Waits until every node answers GET /v1/status; when no node has a replication connection yet, "
        "makes nodes 2..N read-only and replicating from node 1 (a topology changed since, e.g. by a switchover, "
        "is kept); registers the cluster and its servers when no cluster of that name exists. Needs the nodes' "
        "admin token (FERRY_NODE_TOKEN or FERRY_NODE_TOKEN_FILE) and the database (DATABASE_URL), migrated.",
    )
    boot.add_argument("--cluster", required=True, help="the cluster's name in the control plane")
    boot.add_argument("--description", default="", help="the cluster's description when it is registered")
    boot.add_argument(
        "--node",
        action="append",
        required=True,
        metavar="NAME=HOST:PORT,http://HOST:ADMIN_PORT",
        help="a node: its server name, protocol address and admin API URL; repeat in order, the first is the master",
    )
    boot.add_argument("--wait-s", type=float, default=60.0, help="how long the nodes may take to answer (60)")
    reg = commands.add_parser(
        "register",
        help="register a cluster of database servers with its logins and discover it from one seed; safe to repeat",
        description="Waits until the seed answers with the given logins; registers the cluster with them (stored "
        "encrypted; an existing cluster of that name gets these logins); discovers its servers from the seed. "
        "Passwords are read from FERRY_DB_PASSWORD and FERRY_REPLICATION_PASSWORD, never from the command line. "
        "Needs FERRY_SECRET_KEYS (or the development key) and the database, migrated.",
    )
    reg.add_argument("--cluster", required=True, help="the cluster's name in the control plane")
    reg.add_argument("--description", default="", help="the cluster's description when it is registered")
    reg.add_argument("--kind", default="mariadb", choices=["mariadb", "ferry"], help="the servers' kind (mariadb)")
    reg.add_argument("--seed", required=True, metavar="HOST:PORT", help="one server of the cluster (its SQL port)")
    reg.add_argument("--db-user", required=True, help="the control plane's login (password: FERRY_DB_PASSWORD)")
    reg.add_argument(
        "--replication-user", help="the login replicas connect with (password: FERRY_REPLICATION_PASSWORD)"
    )
    reg.add_argument("--tls-ca-file", help="a PEM CA the servers' certificates are verified against (else no TLS)")
    reg.add_argument("--wait-s", type=float, default=60.0, help="how long the seed may take to answer (60)")
    args = parser.parse_args(argv)

    if args.command == "migrate":
        upgrade(get_settings().database.url)
        return 0
    if args.command == "generate-secret-key":
        from ferry_control.core.secrets import generate_key

        print(generate_key())
        return 0
    if args.command == "bootstrap" and len(args.node) < 2:
        parser.error("bootstrap needs at least two --node (the first is the master)")
    commands_run: dict[str, tuple[Callable[[], Coroutine[Any, Any, object]], Callable[[Any], str]]] = {
        "register": (lambda: _register(args), str),
        "bootstrap": (lambda: _bootstrap(args), str),
        "rotate-secrets": (_rotate_secrets, lambda n: f"re-encrypted the secrets of {n} clusters under the first key"),
        "create-token": (lambda: _create_token(args.name, Role(args.role), args.expires_in_days), str),
    }
    run, say = commands_run[args.command]
    return _run(run, say, to_stderr=args.command == "rotate-secrets")


def _run(run: Callable[[], Coroutine[Any, Any, object]], say: Callable[[Any], str], *, to_stderr: bool = False) -> int:
    """Runs one command; prints what it returns, or `error: <why>` on stderr with exit code 1 when the command
    refused (a bootstrap or registration error, or the control plane's own error), never a stack trace."""
    from ferry_control.bootstrap import BootstrapError
    from ferry_control.core.errors import AppError
    from ferry_control.registration import RegistrationError

    try:
        result = asyncio.run(run())
    except (BootstrapError, RegistrationError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except AppError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 1
    print(say(result), file=sys.stderr if to_stderr else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())

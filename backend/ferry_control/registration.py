"""Registering a cluster of database servers from one seed server, with its logins (`cli register`).

What an operator does in the dashboard's "Register a cluster" form, for scripts (`make up` with FERRY_STACK=mariadb,
the end-to-end stack, a deployment's one-shot job). Three steps, each safe to repeat:
1. wait until the seed server answers a status read with the given logins (a bound on the whole wait);
2. the cluster: registered with its logins (stored encrypted, write-only) when no cluster of that name exists; an
   existing one gets the logins given now (a demo cluster started again has new passwords), nothing else changes;
3. discovery from the seed (services/discovery.py, as POST /clusters/{id}/discovery): the seed registered, its
   masters and replicas found and registered, the whole reachable graph walked.
The cluster's `admin_port_offset` is 0: a database server is spoken to on the port its replicas use.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import SecretStr

from ferry_control.core.config import Settings
from ferry_control.core.db import create_engine, create_sessionmaker, session_scope
from ferry_control.core.secrets import SecretBox
from ferry_control.drivers.credentials import ServerCredentials
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import ServerKind
from ferry_control.schemas.cluster import ClusterCreate, ClusterUpdate
from ferry_control.schemas.discovery import DiscoveryRequest
from ferry_control.services.approval import COMMAND_LINE
from ferry_control.services.clusters import ClusterService
from ferry_control.services.discovery import DiscoveryService

#: Time between two status reads of a seed that does not answer yet.
SEED_RETRY_INTERVAL_S = 0.5


class RegistrationError(Exception):
    """Registration cannot go on; the message says why."""


@dataclass(frozen=True)
class Logins:
    """The cluster's logins, as the API takes them (write-only secrets)."""

    db_user: str
    db_password: str = field(repr=False)
    replication_user: str | None = None
    replication_password: str | None = field(default=None, repr=False)
    tls_ca: str | None = field(default=None, repr=False)

    def secrets(self) -> dict[str, SecretStr | None]:
        return {
            "db_user": SecretStr(self.db_user),
            "db_password": SecretStr(self.db_password),
            "replication_user": SecretStr(self.replication_user) if self.replication_user else None,
            "replication_password": SecretStr(self.replication_password) if self.replication_password else None,
            "tls_ca": SecretStr(self.tls_ca) if self.tls_ca else None,
        }

    def credentials(self) -> ServerCredentials:
        return ServerCredentials.of({k: (v.get_secret_value() if v else None) for k, v in self.secrets().items()})


def parse_seed(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon or not host:
        raise RegistrationError(f"--seed {text!r}: expected HOST:PORT")
    try:
        number = int(port)
    except ValueError as e:
        raise RegistrationError(f"--seed {text!r}: the port is not a number") from e
    if not 1 <= number <= 65535:
        raise RegistrationError(f"--seed {text!r}: port {number} is out of range")
    return host.strip("[]"), number


async def wait_for_seed(drivers: DriverFactory, kind: ServerKind, address: str, logins: Logins, wait_s: float) -> int:
    """The seed's own server_id, once it answers a status read with these logins."""
    deadline = time.monotonic() + wait_s
    driver = drivers.for_address(kind, address, logins.credentials())
    while True:
        try:
            return (await driver.status()).server_id
        except DriverError as e:
            if time.monotonic() + SEED_RETRY_INTERVAL_S > deadline:
                raise RegistrationError(f"the seed {address} did not answer within {wait_s:g} s: {e}") from e
        await asyncio.sleep(SEED_RETRY_INTERVAL_S)


async def register(
    settings: Settings,
    *,
    cluster: str,
    description: str,
    kind: ServerKind,
    seed: tuple[str, int],
    logins: Logins,
    wait_s: float,
    say: Callable[[str], None],
) -> int:
    """Runs the three steps, reporting each through `say`; returns the cluster's id."""
    secrets = SecretBox.from_settings(settings)
    if secrets is None:
        raise RegistrationError("no secret key is configured (FERRY_SECRET_KEYS): the logins cannot be stored")
    host, port = seed
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    drivers = DriverFactory(settings, secrets=secrets)
    engine = create_engine(settings)
    try:
        server_id = await wait_for_seed(drivers, kind, address, logins, wait_s)
        say(f"the seed {address} answers (server_id {server_id})")
        async with session_scope(create_sessionmaker(engine)) as session:
            service = ClusterService(session, settings, secrets)
            existing = await service.find_by_name(cluster)
            if existing is None:
                row = await service.create(
                    ClusterCreate.model_validate(
                        {"name": cluster, "description": description, "admin_port_offset": 0, **logins.secrets()}
                    )
                )
                say(f"registered cluster {cluster!r} (id {row.id}) with its logins")
            else:
                row = await service.update(existing.id, ClusterUpdate.model_validate(logins.secrets()))
                say(f"cluster {cluster!r} is registered already (id {row.id}): its logins replaced")
            cluster_id = row.id
        async with session_scope(create_sessionmaker(engine)) as session:
            found = await DiscoveryService(session, drivers, settings).discover(
                cluster_id, DiscoveryRequest(kind=kind, host=host, protocol_port=port, admin_port=port), COMMAND_LINE
            )
            names = ", ".join(s.name for s in found.added) or "none"
            say(f"discovered from {found.seed.name}: added {names}; {len(found.known)} known already")
            for _, note in found.notes:
                say(f"  note: {note}")
        return cluster_id
    finally:
        await drivers.aclose()
        await engine.dispose()

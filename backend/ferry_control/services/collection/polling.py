"""Polling: which servers to poll (every server with an admin address, with its own cluster's credentials), and one
poll of each through its driver, at most `poll_concurrency_max` at once, each bounded by `poll_timeout_s`. An answer
is checked before it is used (`validation`): a server that does not answer, or answers nonsense, gives an outcome
with the reason and no status, and nothing it said reaches the other servers' records. Whatever one poll raises —
a driver's typed error, a time-out, an invalid answer, or anything unforeseen a hostile answer provokes — becomes
that server's outcome: no poll ever raises into the cycle."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.metrics import Metrics
from ferry_control.core.untrusted_text import bounded
from ferry_control.drivers.base import ServerDriver, ServerStatus
from ferry_control.drivers.credentials import ServerCredentials
from ferry_control.drivers.errors import DriverError, ErrorKind
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import LinkSource, ServerKind
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.services.collection.validation import InvalidStatus, validate_status

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PollTarget:
    server_id: int
    cluster_id: int
    kind: ServerKind
    admin_address: str
    #: The credentials of the server's own cluster (decrypted), or why they could not be opened.
    credentials: ServerCredentials | None
    credentials_error: str | None = None
    protocol_address: str | None = None
    #: Others replicate from it and it from none (by the stored links): the master a write probe is for.
    is_master: bool = False


@dataclass(frozen=True)
class PollOutcome:
    target: PollTarget
    #: None when the poll failed (`error` says why).
    status: ServerStatus | None
    error: str | None
    at: datetime


class Poller:
    def __init__(self, drivers: DriverFactory, settings: Settings, metrics: Metrics):
        self._drivers = drivers
        self._settings = settings
        self._metrics = metrics

    async def targets(self, session: AsyncSession) -> list[PollTarget]:
        servers = await ServerRepository(session).list_all_with_cluster()
        credentials: dict[int, tuple[ServerCredentials | None, str | None]] = {}
        for s in servers:
            if s.cluster_id not in credentials:
                try:
                    credentials[s.cluster_id] = (self._drivers.credentials_for(s.cluster), None)
                except DriverError as e:
                    credentials[s.cluster_id] = (None, str(e))
                except Exception as e:  # a cluster whose stored secrets cannot be read stops only its own polls
                    log.exception("the credentials of cluster %s could not be opened", s.cluster_id)
                    credentials[s.cluster_id] = (None, f"its credentials could not be opened ({type(e).__name__})")
        links = [link for link in await LinkRepository(session).list_all() if link.source == LinkSource.replica]
        masters = {link.master_server_id for link in links} - {link.replica_server_id for link in links}
        return [
            PollTarget(
                s.id, s.cluster_id, s.kind, s.admin_address, *credentials[s.cluster_id],
                protocol_address=s.protocol_address, is_master=s.id in masters,
            )
            for s in servers
            if s.admin_address is not None and s.approved  # a pending server's address is never contacted
        ]  # fmt: skip

    async def poll_all(self, targets: Sequence[PollTarget]) -> list[PollOutcome]:
        semaphore = asyncio.Semaphore(self._settings.collection.poll_concurrency_max)

        async def poll(target: PollTarget) -> PollOutcome:
            async with semaphore:
                return await self.poll(target)

        return list(await asyncio.gather(*(poll(t) for t in targets)))

    async def poll(self, target: PollTarget) -> PollOutcome:
        timeout_s = self._settings.collection.poll_timeout_s
        try:
            if target.credentials_error is not None:
                raise DriverError(
                    target.admin_address, "secrets_unavailable", target.credentials_error,
                    kind=ErrorKind.not_configured,
                )  # fmt: skip
            driver = self._drivers.for_address(
                target.kind, target.admin_address, target.credentials, target.protocol_address
            )
            async with asyncio.timeout(timeout_s):
                status = await driver.status()
            validate_status(status)
            status = await self._probe(target, driver, status)
        except DriverError as e:
            return self._failed(target, str(e), "error")
        except TimeoutError:
            return self._failed(target, f"no answer within {timeout_s} s", "error")
        except InvalidStatus as e:
            return self._failed(target, f"{target.admin_address}: {e}", "invalid")
        except Exception as e:
            # Nothing a server answers may stop the cycle: an error no check foresaw is this server's alone.
            log.warning("polling %s failed unexpectedly", target.admin_address, exc_info=True)
            return self._failed(target, f"{target.admin_address}: its answer could not be read: {type(e).__name__}: "
                                        f"{e}", "invalid")  # fmt: skip
        self._metrics.collector_polls.labels("ok").inc()
        return PollOutcome(target, status, None, datetime.now(UTC))

    async def _probe(self, target: PollTarget, driver: ServerDriver, status: ServerStatus) -> ServerStatus:
        """With `master_write_probe` on, a writable master that reports no failure must also commit a probe write
        in time; when it cannot, its status reports the failure (the failover monitor counts it)."""
        if not (self._settings.failover.master_write_probe and target.is_master) or status.read_only or status.failure:
            return status
        reason = await driver.write_probe(status.default_domain, self._settings.failover.master_write_probe_timeout_s)
        self._metrics.collector_polls.labels("probe_failed" if reason else "probe_ok").inc()
        return status if reason is None else replace(status, failure=f"write probe: {reason}")

    def _failed(self, target: PollTarget, error: str, result: str) -> PollOutcome:
        self._metrics.collector_polls.labels(result).inc()
        return PollOutcome(target, None, bounded(error), datetime.now(UTC))

"""Recording one cycle's outcomes, per cluster, in the caller's transaction: per server its reachability and health
(unreachable after `unreachable_after_failures` failed polls in a row; the last successful observation — positions,
read-only flag, time — kept through any number of failed ones), change-only position samples per domain; the
replication links (from each replica's own connections, and — for replicas whose admin address is unknown — from the
master's list of streaming replicas) with lag per domain and change-only lag samples. Each server is recorded in a
savepoint of its own (its observation, then its links): a failure while recording one server's answer rolls back
that part only, is logged, and records that server as a failed poll naming why, so one server's answer can never
undo another's record. Each cluster has its savepoint around those too. As savepoints, flushes and queries per
server and per cluster cost most of a cycle's CPU, the whole cycle is first recorded in one go (the servers and links
of every cluster read in a few queries, one savepoint, one flush); only when that fails is it rolled back and
recorded cluster by cluster, then server by server. Returns the events to publish once the transaction commits.
The clusters are held first (`ClusterRepository.hold`), so deleting one waits for the record instead of deadlocking
with it; a cluster deleted since its servers were polled is not recorded. What is kept in memory (the masters'
timelines) is of the servers recorded in the cycle only.

Lag per domain: `transactions`, the seq_no difference between the master's gtid_binlog_pos (this cycle's poll, else
the last stored) and the replica's gtid_current_pos; `seconds`, the age of the collector's first sighting of the
master past the replica's position (`timeline.MasterTimelines`: the same for every kind of server, resolution = the
poll interval), else — the master not polled — what the replica reports; `reported_seconds`, the replica's own
figure per domain where it gives one. A connection's `Seconds_Behind_Master` (the server's own, per connection) is
kept on the link as `seconds_behind_master`."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.gtid import position
from ferry_control.core.untrusted_text import bounded
from ferry_control.drivers.base import ReplicaConnection
from ferry_control.models import (
    HealthEvent,
    HealthState,
    LinkSource,
    ReplicationLink,
    Server,
)
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.samples import SampleRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.events import HealthEvent as HealthChanged
from ferry_control.schemas.events import LinkEvent, PositionEvent, ReadOnlyEvent
from ferry_control.services.collection.addresses import split_address
from ferry_control.services.collection.polling import PollOutcome
from ferry_control.services.collection.timeline import ENTRIES_MAX, MasterTimelines
from ferry_control.services.event_bus import ClusterEvent
from ferry_control.services.link_health import applied_moved_at

log = logging.getLogger(__name__)

#: How far back a master's timeline is filled from the stored position samples when this instance first sees it.
TIMELINE_SEED_S = 3600


def lag_against_master(
    replica_position: Any,
    master: Server | None,
    master_binlog: Any,
    connection: ReplicaConnection,
    timelines: MasterTimelines,
    at: datetime,
) -> dict[str, dict[str, Any]]:
    """Per domain: transactions behind and seconds behind (see the module's doc), and the replica's own figure."""
    lag: dict[str, dict[str, Any]] = {}
    if master is not None and master_binlog is not None:
        behind = master_binlog.difference(replica_position)
        for domain in master_binlog.domains():
            reported = connection.lag.get(domain)
            mine = replica_position.get(domain)
            observed = timelines.lag_seconds(master.id, domain, mine.seq if mine is not None else 0, at)
            reported_seconds = float(reported.seconds) if reported else None
            lag[str(domain)] = {
                "transactions": int(behind.get(domain, 0)),
                "seconds": observed if observed is not None else (reported_seconds or 0.0),
                "reported_seconds": reported_seconds,
            }
    else:
        for domain, reported in connection.lag.items():
            lag[str(domain)] = {
                "transactions": reported.transactions,
                "seconds": float(reported.seconds),
                "reported_seconds": float(reported.seconds),
            }
    return lag


class Recorder:
    def __init__(self, settings: Settings, timelines: MasterTimelines | None = None):
        self._settings = settings
        #: When each master was first seen past each position (kept across cycles).
        self.timelines = timelines or MasterTimelines()
        self._seeded: set[int] = set()

    async def record(self, session: AsyncSession, outcomes: Sequence[PollOutcome]) -> list[ClusterEvent]:
        by_cluster: dict[int, list[PollOutcome]] = {}
        for outcome in outcomes:
            by_cluster.setdefault(outcome.target.cluster_id, []).append(outcome)
        # The clusters first (before any savepoint, whose rollback would let go of them): one deleted meanwhile
        # waits for this transaction, or was deleted before it and is not recorded (ClusterRepository.hold).
        held = await ClusterRepository(session).hold(by_cluster)
        by_cluster = {cluster_id: polled for cluster_id, polled in by_cluster.items() if cluster_id in held}
        self._keep_only({o.target.server_id for polled in by_cluster.values() for o in polled})
        # Fastest: every cluster in one savepoint and one flush, their servers and links read in a few queries.
        # Should anything fail, that is undone and each cluster recorded on its own (then server by server).
        try:
            async with session.begin_nested():
                servers_of = await ServerRepository(session).list_for_clusters(by_cluster)
                links_of = await LinkRepository(session).list_for_clusters(by_cluster)
                samples = SampleRepository(session)
                events: list[ClusterEvent] = []
                for cluster_id, cluster_outcomes in by_cluster.items():
                    events += await self._record_cluster(
                        session, cluster_id, cluster_outcomes, careful=False,
                        known=(servers_of[cluster_id], links_of[cluster_id]), samples=samples,
                    )  # fmt: skip
                await samples.write()
                await ServerRepository(session).flush()
            return events
        except Exception as e:
            log.info("recording the cycle in one go failed (%s): recording it cluster by cluster", e)
        events = []
        for cluster_id, cluster_outcomes in by_cluster.items():
            try:
                async with session.begin_nested():
                    events += await self._record_cluster(session, cluster_id, cluster_outcomes, careful=False)
                continue
            except Exception as e:
                log.info("recording cluster %s in one go failed (%s): recording it server by server", cluster_id, e)
            try:
                async with session.begin_nested():
                    events += await self._record_cluster(session, cluster_id, cluster_outcomes, careful=True)
            except Exception:
                log.exception("recording cluster %s's poll failed: its part of this cycle is not stored", cluster_id)
        return events

    def _keep_only(self, server_ids: set[int]) -> None:
        """Forgets what is kept in memory of the servers this cycle does not record: deleted (alone or with their
        cluster), or collected by another instance now — seeded again from the stored samples should they come
        back, as what happened meanwhile was not seen here."""
        self.timelines.forget(keep=server_ids)
        self._seeded &= server_ids

    async def _record_cluster(
        self,
        session: AsyncSession,
        cluster_id: int,
        cluster_outcomes: Sequence[PollOutcome],
        *,
        careful: bool,
        known: tuple[list[Server], list[ReplicationLink]] | None = None,
        samples: SampleRepository | None = None,
    ) -> list[ClusterEvent]:
        """Records the cluster's outcomes; `careful`: each server's part in a savepoint of its own, a failure
        recorded as that server's failed poll (else any failure raised for the caller to record the cluster again
        carefully). `known` and `samples`: the cluster's servers and links, already read, and the samples of the
        whole cycle, written and flushed by the caller."""
        servers_repo = ServerRepository(session)
        links_repo = LinkRepository(session)
        shared = samples is not None
        samples = samples or SampleRepository(session)
        events: list[ClusterEvent] = []
        known_servers = known[0] if known is not None else await servers_repo.list_for_cluster(cluster_id)
        servers = {s.id: s for s in known_servers}
        polled = {o.target.server_id: o for o in cluster_outcomes if o.target.server_id in servers}
        await self._seed_timelines(cluster_id, polled, samples)
        for server_id, outcome in list(polled.items()):
            server = servers[server_id]
            if not careful:
                events += self._record_server(server, outcome, servers_repo, samples)
                continue
            try:
                async with session.begin_nested():
                    recorded = self._record_server(server, outcome, servers_repo, samples)
                    await samples.write()
                    await servers_repo.flush()
                events += recorded
            except Exception as e:
                samples.discard()
                polled[server_id] = await self._unrecordable(session, servers, outcome, e, "its answer")
                events += await self._record_failed(session, server, polled[server_id], servers_repo, samples)
        if careful:
            await servers_repo.flush()
        links = list(known[1]) if known is not None else list(await links_repo.list_for_cluster(cluster_id))
        for server_id, outcome in list(polled.items()):
            if outcome.status is None:
                continue
            if not careful:
                events += await self._record_links(cluster_id, servers, server_id, outcome, links, links_repo, samples)
                continue
            try:
                async with session.begin_nested():
                    recorded = await self._record_links(cluster_id, servers, server_id, outcome, links, links_repo,
                                                        samples)  # fmt: skip
                    await samples.write()
                    await servers_repo.flush()
                events += recorded
            except Exception as e:
                samples.discard()
                polled[server_id] = await self._unrecordable(session, servers, outcome, e, "its replication links")
                links[:] = list(await links_repo.list_for_cluster(cluster_id))
                events += await self._record_failed(session, servers[server_id], polled[server_id], servers_repo,
                                                    samples)  # fmt: skip
        if not shared:
            await samples.write()
            await servers_repo.flush()
        return events

    async def _unrecordable(
        self, session: AsyncSession, servers: dict[int, Server], outcome: PollOutcome, error: Exception, what: str
    ) -> PollOutcome:
        """A server's answer that passed validation but could not be stored (a bound no check knew of, a database
        refusal): logged, the rolled-back objects read again, and a failed outcome naming why in its place."""
        address = outcome.target.admin_address
        server_id = outcome.target.server_id
        log.exception(
            "recording %s of the server with id %s (%s) failed: recorded as a failed poll", what, server_id, address
        )
        repo = ServerRepository(session)
        for server in servers.values():
            await repo.refresh(server)
        reason = f"{address}: {what} could not be recorded: {type(error).__name__}: {error}"
        return PollOutcome(outcome.target, None, bounded(reason), outcome.at)

    async def _record_failed(
        self, session: AsyncSession, server: Server, outcome: PollOutcome, repo: ServerRepository,
        samples: SampleRepository,
    ) -> list[ClusterEvent]:  # fmt: skip
        async with session.begin_nested():
            events = self._record_server(server, outcome, repo, samples)
            await samples.write()
            await repo.flush()
        return events

    async def _seed_timelines(self, cluster_id: int, polled: dict[int, PollOutcome], samples: SampleRepository) -> None:
        """A server this instance has not seen yet: its timeline starts from its stored position samples, so lag
        in seconds is right from the first cycle after a start or a change of collector leader."""
        for server_id, outcome in polled.items():
            if server_id in self._seeded or outcome.status is None:
                continue
            self._seeded.add(server_id)
            history = await samples.position_history(
                cluster_id, outcome.at - timedelta(seconds=TIMELINE_SEED_S), outcome.at, ENTRIES_MAX,
                server_id=server_id,
            )  # fmt: skip
            for sample in history:
                self.timelines.observe(server_id, [(sample.domain_id, sample.seq_no)], sample.sampled_at)

    def _record_server(
        self, server: Server, outcome: PollOutcome, repo: ServerRepository, samples: SampleRepository
    ) -> list[ClusterEvent]:
        """Reachability and health; on a successful poll, the observation (positions, read-only, time) and a
        position sample per domain that moved; on a failed one, the observation is kept as it was."""
        events: list[ClusterEvent] = []
        cluster_id = server.cluster_id
        previous_health = server.health
        status = outcome.status
        if status is None:
            server.consecutive_failures += 1
            server.last_error = outcome.error
            if server.consecutive_failures >= self._settings.collection.unreachable_after_failures:
                server.health = HealthState.unreachable
        else:
            # A server that answers but reports itself failed (it cannot write or sync) fails the check all the
            # same: the failover monitor counts it like a poll without an answer.
            server.consecutive_failures = server.consecutive_failures + 1 if status.failure else 0
            server.last_error = status.failure
            server.last_seen_at = outcome.at
            server.health = HealthState.failing if status.failure else HealthState.healthy
            server.reported_server_id = status.server_id
            set_since = server.read_only_set_at is not None and server.read_only_set_at > outcome.at
            if server.read_only is not None and server.read_only != status.read_only and not set_since:
                events.append(
                    ClusterEvent.of(
                        cluster_id, ReadOnlyEvent(registered_server_id=server.id, read_only=status.read_only)
                    )
                )
            if not set_since:  # an operation changed it after this poll: its record stands until the next poll
                server.read_only = status.read_only
            if status.version is not None:
                server.version = status.version[:200]
            if status.binlog_format is not None:
                server.binlog_format = status.binlog_format[:32]
            if status.replicas_may_be_ahead is not None:
                server.replicas_may_be_ahead = status.replicas_may_be_ahead
            if status.master_role is not None and server.master_role != (role := asdict(status.master_role)):
                server.master_role = role
            if (server.warnings or []) != list(status.warnings):
                server.warnings = list(status.warnings)
            old = position(server.gtid_current_pos)
            new = position(status.positions.current)
            for gtid in new:
                if old.get(gtid.domain) != gtid:
                    samples.add_position(
                        server_id=server.id,
                        domain_id=gtid.domain,
                        gtid=f"{gtid.domain}-{gtid.server}-{gtid.seq}",
                        seq_no=gtid.seq,
                        sampled_at=outcome.at,
                    )
                    events.append(
                        ClusterEvent.of(
                            cluster_id,
                            PositionEvent(
                                registered_server_id=server.id,
                                domain=gtid.domain,
                                gtid=f"{gtid.domain}-{gtid.server}-{gtid.seq}",
                                seq_no=gtid.seq,
                            ),
                        )
                    )
            server.gtid_binlog_pos = status.positions.binlog
            self.timelines.observe(server.id, [(g.domain, g.seq) for g in position(server.gtid_binlog_pos)],
                                   outcome.at)  # fmt: skip
            server.gtid_slave_pos = status.positions.slave
            server.gtid_current_pos = str(new)
        if server.health != previous_health:
            repo.add_health_event(
                HealthEvent(server_id=server.id, state=server.health, detail=server.last_error, at=outcome.at)
            )
            events.append(
                ClusterEvent.of(
                    cluster_id,
                    HealthChanged(
                        registered_server_id=server.id,
                        state=server.health.value,
                        previous=previous_health.value,
                        detail=server.last_error,
                    ),
                )
            )
        return events

    async def _record_links(
        self,
        cluster_id: int,
        servers: dict[int, Server],
        server_id: int,
        outcome: PollOutcome,
        links: list[ReplicationLink],
        repo: LinkRepository,
        samples: SampleRepository,
    ) -> list[ClusterEvent]:
        """The links one polled server's answer tells of: its own connections as a replica, and — as a master — the
        streams of replicas the collector cannot poll itself."""
        assert outcome.status is not None
        events: list[ClusterEvent] = []
        by_protocol_address = {(s.host, s.protocol_port): s for s in servers.values() if s.protocol_port is not None}
        by_reported_id = {s.reported_server_id: s for s in servers.values() if s.reported_server_id is not None}

        # Links as the replica reports them.
        replica = servers[server_id]
        replica_position = position(replica.gtid_current_pos)
        existing = {
            link.name: link
            for link in links
            if link.replica_server_id == server_id and link.source == LinkSource.replica
        }
        for connection in outcome.status.connections:
            address = split_address(connection.master_address)
            master = by_protocol_address.get(address) if address else None
            master_binlog = position(master.gtid_binlog_pos) if master and master.gtid_binlog_pos is not None else None
            lag = lag_against_master(replica_position, master, master_binlog, connection, self.timelines, outcome.at)
            link = existing.pop(connection.name, None)
            if link is None:
                link = await repo.add(
                    ReplicationLink(
                        cluster_id=cluster_id,
                        replica_server_id=server_id,
                        name=connection.name,
                        source=LinkSource.replica,
                        lag={},
                    )
                )
                links.append(link)
            events += self._update_link(link, connection, master, lag, outcome.at, samples)
        for gone in existing.values():
            links.remove(gone)
            await repo.delete(gone)
            events.append(
                ClusterEvent.of(cluster_id, LinkEvent(link_id=gone.id, replica_registered_server_id=server_id,
                                                      connection=gone.name, removed=True))
            )  # fmt: skip

        # Streams the master reports, for replicas the collector cannot poll itself.
        streams = {
            link.replica_server_id: link
            for link in links
            if link.master_server_id == server_id and link.source == LinkSource.master
        }
        for streaming in outcome.status.replicas:
            streamer = by_reported_id.get(streaming.server_id)
            if streamer is None or streamer.admin_port is not None:
                continue
            link = streams.pop(streamer.id, None)
            if link is None:
                master = servers[server_id]
                link = await repo.add(
                    ReplicationLink(
                        cluster_id=cluster_id,
                        replica_server_id=streamer.id,
                        name=None,
                        source=LinkSource.master,
                        master_server_id=server_id,
                        master_address=master.protocol_address,
                        running=True,
                        lag={},
                    )
                )
                links.append(link)
                events.append(
                    ClusterEvent.of(cluster_id, LinkEvent(link_id=link.id, replica_registered_server_id=streamer.id,
                                                          master_registered_server_id=server_id, connection=None))
                )  # fmt: skip
        for gone in streams.values():
            links.remove(gone)
            await repo.delete(gone)
        return events

    def _update_link(
        self,
        link: ReplicationLink,
        connection: ReplicaConnection,
        master: Server | None,
        lag: dict[str, dict[str, Any]],
        at: datetime,
        samples: SampleRepository,
    ) -> list[ClusterEvent]:
        error = connection.last_error
        before = (
            link.master_server_id, link.running, link.io_state, link.sql_state, link.last_error_code,
            link.waiting_for_relay_space,
        )  # fmt: skip
        link.master_address = connection.master_address
        link.master_server_id = master.id if master else None
        link.running = connection.running
        link.io_state = connection.io_state.value
        link.sql_state = connection.sql_state.value
        link.waiting_for_relay_space = connection.waiting_for_relay_space
        link.received_position = connection.received_position
        link.applied_moved_at = applied_moved_at(link, connection.applied_position, at)
        link.applied_position = connection.applied_position
        link.sql_state_detail = connection.sql_state_detail
        link.settings = asdict(connection.settings) if connection.settings is not None else None
        link.last_error_side = error.side if error else None
        link.last_error_code = error.code if error else None
        link.last_error_message = error.message if error else None
        previous_lag = link.lag or {}
        for domain, value in lag.items():
            if previous_lag.get(domain) != value:
                samples.add_lag(
                    link_id=link.id,
                    cluster_id=link.cluster_id,
                    replica_server_id=link.replica_server_id,
                    master_server_id=link.master_server_id,
                    connection=link.name,
                    domain_id=int(domain),
                    transactions=value["transactions"],
                    seconds=value["seconds"],
                    sampled_at=at,
                )
        lag_changed = previous_lag != lag
        link.lag = lag
        after = (
            link.master_server_id, link.running, link.io_state, link.sql_state, link.last_error_code,
            link.waiting_for_relay_space,
        )  # fmt: skip
        if before == after and not lag_changed:
            return []
        return [
            ClusterEvent.of(
                link.cluster_id,
                LinkEvent(
                    link_id=link.id,
                    replica_registered_server_id=link.replica_server_id,
                    master_registered_server_id=link.master_server_id,
                    connection=link.name,
                    running=link.running,
                    io_state=link.io_state,
                    sql_state=link.sql_state,
                    waiting_for_relay_space=link.waiting_for_relay_space,
                    lag=lag,
                    last_error_code=link.last_error_code,
                ),
            )
        ]

"""A live picture of one cluster for an operation: every registered server polled now through its driver (not the
collector's last sample), who replicates from whom (connections matched to registered servers by protocol address),
and which server is the master."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from ferry_control.core.gtid import GtidPosition
from ferry_control.core.naming import server_label, unknown_server
from ferry_control.core.untrusted_text import bounded
from ferry_control.drivers.base import IoState, MasterRole, ReplicaConnection, ServerDriver, ServerStatus, SqlState
from ferry_control.drivers.errors import DriverError, ErrorKind
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import Cluster, PromotionRule, Server, ServerKind
from ferry_control.services.collection.addresses import split_address
from ferry_control.services.collection.validation import InvalidStatus, validate_status
from ferry_control.services.orchestrator.gtid import position


@dataclass(frozen=True)
class ServerInfo:
    """What an operation needs of a registered server, detached from any session."""

    id: int
    name: str
    kind: ServerKind
    host: str
    protocol_port: int | None
    admin_address: str | None
    maintenance: bool
    fenced: bool
    #: The collector's last successful observation of the server (kept through any number of failed polls): its
    #: gtid_binlog_pos and when it was read. The lost-transactions report of a failover uses both.
    last_binlog_pos: str | None
    last_seen_at: datetime | None
    #: As the collector last read it: the server sends to replicas before its binlog is durable.
    replicas_may_be_ahead: bool | None = None
    #: As the collector last read it: its master-side settings (None: none read).
    master_role: MasterRole | None = None
    #: The server_id it reported at its last successful poll (how its masters list it among their replicas).
    reported_server_id: int | None = None
    #: Whether operations may promote it, and its labels (what `candidate_labels` compares).
    promotion_rule: PromotionRule = PromotionRule.neutral
    labels: Mapping[str, str] = field(default_factory=dict)
    #: Why it is fenced (None: not fenced, or no reason recorded).
    fence_reason: str | None = None
    #: An admin (or the allow-list) approved its address: only then is it contacted (services/approval.py).
    approved: bool = False

    @property
    def protocol_address(self) -> str | None:
        return None if self.protocol_port is None else f"{self.host}:{self.protocol_port}"

    @property
    def label(self) -> str:
        return server_label(self.name, self.reported_server_id)

    @classmethod
    def of(cls, server: Server) -> ServerInfo:
        return cls(
            id=server.id,
            name=server.name,
            kind=server.kind,
            host=server.host,
            protocol_port=server.protocol_port,
            admin_address=server.admin_address,
            maintenance=server.maintenance,
            fenced=server.fenced,
            fence_reason=server.fence_reason,
            last_binlog_pos=server.gtid_binlog_pos,
            last_seen_at=server.last_seen_at,
            replicas_may_be_ahead=server.replicas_may_be_ahead,
            master_role=MasterRole(**server.master_role) if server.master_role else None,
            reported_server_id=server.reported_server_id,
            promotion_rule=server.promotion_rule,
            labels={str(k): str(v) for k, v in (server.labels or {}).items()},
            approved=server.approved,
        )


@dataclass
class ServerView:
    info: ServerInfo
    driver: ServerDriver | None
    status: ServerStatus | None
    #: Why there is no status.
    error: str | None

    @property
    def reachable(self) -> bool:
        return self.status is not None

    @property
    def healthy(self) -> bool:
        return self.status is not None and self.status.failure is None

    @property
    def current(self) -> GtidPosition:
        assert self.status is not None
        return position(self.status.positions.current)

    @property
    def binlog(self) -> GtidPosition:
        assert self.status is not None
        return position(self.status.positions.binlog)

    def require_driver(self) -> ServerDriver:
        if self.driver is None:
            raise DriverError(
                self.info.host, "no_admin_address", f"{self.info.label} has no admin address",
                kind=ErrorKind.not_configured,
            )  # fmt: skip
        return self.driver


@dataclass(frozen=True)
class Link:
    """`replica` replicates from `master` through the named connection."""

    replica: ServerView
    master: ServerView
    connection: ReplicaConnection

    @property
    def replicating(self) -> bool:
        c = self.connection
        return c.running and c.io_state == IoState.connected and c.sql_state != SqlState.error and c.last_error is None

    @property
    def lost_master(self) -> bool:
        """The connection runs but has lost its master (retrying, or stopped by an IO error)."""
        c = self.connection
        return c.io_state == IoState.error or (c.running and c.io_state in (IoState.reconnecting, IoState.connecting))


class ClusterSnapshot:
    def __init__(self, cluster: Cluster, views: Sequence[ServerView]):
        self.cluster_id = cluster.id
        self.cluster_name = cluster.name
        #: Labels a promoted server must share with the one it replaces (the cluster's setting).
        self.candidate_labels: list[str] = [str(label) for label in (cluster.candidate_labels or [])]
        self.views = list(views)
        self.by_id = {v.info.id: v for v in self.views}
        self._by_address = {
            (v.info.host, v.info.protocol_port): v for v in self.views if v.info.protocol_port is not None
        }

    @classmethod
    async def take(
        cls, cluster: Cluster, servers: Sequence[Server], drivers: DriverFactory, timeout_s: float
    ) -> ClusterSnapshot:
        infos = [ServerInfo.of(s) for s in servers]
        credentials = drivers.credentials_for(cluster)

        async def poll(info: ServerInfo) -> ServerView:
            if info.admin_address is None:
                return ServerView(info, None, None, "no admin address recorded")
            if not info.approved:
                return ServerView(info, None, None, "pending: its address awaits an admin's approval")
            driver = drivers.for_address(info.kind, info.admin_address, credentials, info.protocol_address)
            status, error = await _read_status(driver, timeout_s)
            if status is None:
                return ServerView(info, driver, None, error)
            # The server_id it reports now, so messages name it as it is (the collector's may be older or unset).
            return ServerView(replace(info, reported_server_id=status.server_id), driver, status, None)

        return cls(cluster, await asyncio.gather(*(poll(i) for i in infos)))

    async def refresh(self, server_id: int, timeout_s: float) -> None:
        """Polls one server again (the master, after its replicas: then it is at least as new as anything they
        replicated from it, which comparing their positions with it needs)."""
        view = self.by_id[server_id]
        if view.driver is None:
            return
        view.status, view.error = await _read_status(view.driver, timeout_s)

    def view(self, server_id: int) -> ServerView:
        return self.by_id[server_id]

    def label_of(self, server_id: int) -> str:
        """How messages name the server with this control plane id (core/naming.py), registered here or not."""
        view = self.by_id.get(server_id)
        return view.info.label if view is not None else unknown_server(server_id)

    def master_of(self, connection: ReplicaConnection) -> ServerView | None:
        address = split_address(connection.master_address)
        return self._by_address.get(address) if address else None

    def links(self) -> list[Link]:
        """Every connection of a reachable server whose master is a registered server."""
        found = []
        for view in self.views:
            if view.status is None:
                continue
            for connection in view.status.connections:
                master = self.master_of(connection)
                if master is not None and master is not view:
                    found.append(Link(view, master, connection))
        return found

    def links_of(self, replica_id: int) -> list[Link]:
        return [link for link in self.links() if link.replica.info.id == replica_id]

    def replicas_of(self, master_id: int) -> list[Link]:
        return [link for link in self.links() if link.master.info.id == master_id]

    def roots(self) -> list[ServerView]:
        """Servers others replicate from that replicate from no registered server themselves (each the origin of
        its domains; the two-master shape has two), by id."""
        links = self.links()
        replicating = {link.replica.info.id for link in links}
        return [self.by_id[i] for i in sorted({link.master.info.id for link in links} - replicating)]

    def lost_root(self, source_id: int | None = None) -> tuple[ServerView | None, str]:
        """The source a failover replaces: `source_id` when given (`source`: a root or an intermediate master);
        else the only root; else, of several roots, the only one that does not answer or reports a failure — with
        why when there is none."""
        if source_id is not None:
            return self.source(source_id)
        roots = self.roots()
        if len(roots) <= 1:
            return self.master()
        lost = [r for r in roots if not r.healthy]
        names = ", ".join(r.info.label for r in roots)
        if len(lost) == 1:
            return lost[0], f"{lost[0].info.label} is the master that is lost, of several ({names})"
        if not lost:
            return roots[0], f"every master answers ({names}): name the one to replace (source_registered_server_id)"
        return (
            None,
            f"several masters are lost ({', '.join(r.info.label for r in lost)}): name one "
            "(source_registered_server_id)",
        )

    def source(self, source_id: int | None = None, candidate_id: int | None = None) -> tuple[ServerView | None, str]:
        """The source an operation replaces: any server others replicate from — a root, or an intermediate master
        with incoming connections of its own. `source_id` when given; else implied by the candidate when it
        replicates from one registered server only; else the cluster's only master (`master`)."""
        if source_id is not None:
            view = self.by_id.get(source_id)
            if view is None:
                return None, f"{unknown_server(source_id)} is not a server of this cluster"
            if not self.replicas_of(source_id):
                return None, f"{view.info.label} is not a source: no registered server replicates from it"
            return view, f"{view.info.label} is the source named"
        if candidate_id is not None and candidate_id in self.by_id:
            masters = {link.master.info.id for link in self.links_of(candidate_id)}
            if len(masters) == 1:
                view = self.by_id[masters.pop()]
                return view, f"{view.info.label} is the source (the candidate's only master)"
            if len(masters) > 1:
                names = ", ".join(self.by_id[m].info.label for m in sorted(masters))
                candidate = self.by_id[candidate_id].info.label
                return None, f"{candidate} replicates from several sources ({names}): name the one it replaces"
        return self.master()

    def master(self) -> tuple[ServerView | None, str]:
        """The server others replicate from that replicates from no registered server itself; with why when
        there is none or several."""
        roots = self.roots()
        if len(roots) == 1:
            return roots[0], f"{roots[0].info.label} is the master"
        if not roots:
            reachable = [v for v in self.views if v.reachable]
            if len(self.views) == 1 and reachable:
                return reachable[0], f"{reachable[0].info.label} is the only server"
            return None, "no server is replicated from by the others without replicating itself"
        names = ", ".join(r.info.label for r in roots)
        return None, f"several servers are masters of others: {names}"


async def _read_status(driver: ServerDriver, timeout_s: float) -> tuple[ServerStatus | None, str | None]:
    """The server's status, validated as a poll's is (an answer that does not parse, or a position or id out of its
    bounds — an inflated GTID, say — is no status: such a server never wins a candidate choice), or why there is
    none."""
    try:
        async with asyncio.timeout(timeout_s):
            status = await driver.status()
        validate_status(status)
    except DriverError as e:
        return None, str(e)
    except TimeoutError:
        return None, f"no answer within {timeout_s} s"
    except InvalidStatus as e:
        return None, bounded(f"its status is not valid: {e}")
    return status, None

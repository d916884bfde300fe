"""Drill schedules and runs: schedules with validated cron expressions and time zones (next run times computed by
cronsim in the schedule's zone, DST included, stored in UTC), and starting a run — now, or when the scheduler finds a
schedule due — of either kind (`switchover`, `failover`). A run is a `drill_runs` row plus an operation of type
`drill` that holds the cluster while it runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import islice
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.errors import AppError, Conflict, NotFound
from ferry_control.core.naming import unknown_server
from ferry_control.core.outbound import WebhookPolicy
from ferry_control.core.security import Role
from ferry_control.models import DrillRun, DrillSchedule, LinkSource, Operation
from ferry_control.repositories.drills import DrillRepository
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.cluster import REDACTED
from ferry_control.schemas.drill import DrillRunCreate, DrillScheduleCreate, DrillScheduleRead, DrillScheduleUpdate
from ferry_control.schemas.operation import DrillParams, SwitchoverParams
from ferry_control.services.clusters import ClusterService, check_webhook
from ferry_control.services.operations import OperationService
from ferry_control.services.orchestrator.drill_parts import next_in_rotation
from ferry_control.services.orchestrator.runner import OperationRunner

#: How many upcoming run times a schedule shows.
NEXT_RUNS_SHOWN = 5


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise AppError(
            f"unknown time zone {name!r} (use an IANA name such as Europe/Berlin)", code="bad_timezone"
        ) from None


def next_runs(cron: str, timezone: str, after: datetime, count: int) -> list[datetime]:
    """The next `count` times the expression fires after `after`, evaluated in `timezone`, returned in UTC."""
    try:
        times = CronSim(cron, after.astimezone(zone(timezone)))
        return [t.astimezone(UTC) for t in islice(times, count)]
    except CronSimError as e:
        raise AppError(f"cron expression {cron!r} is invalid: {e}", code="bad_cron") from None


def read_schedule(
    schedule: DrillSchedule, now: datetime | None = None, role: Role = Role.operator
) -> DrillScheduleRead:
    """The schedule with its next runs; a viewer does not see the webhook URL (it often holds a secret)."""
    upcoming = next_runs(schedule.cron, schedule.timezone, now or datetime.now(UTC), NEXT_RUNS_SHOWN)
    read = DrillScheduleRead.model_validate(schedule)
    read.next_runs = upcoming if schedule.enabled else []
    if read.webhook_url is not None and not role.allows(Role.operator):
        read.webhook_url = REDACTED
    return read


#: A schedule's columns keep the ids' older names (the API's are `…_registered_server_id`).
_COLUMNS = {"candidate_registered_server_id": "candidate_server_id", "source_registered_server_id": "source_server_id"}


def _columns(fields: dict[str, Any]) -> dict[str, Any]:
    """A schedule's fields as its row's columns are named."""
    return {_COLUMNS.get(key, key): value for key, value in fields.items()}


def plan_of(schedule: DrillSchedule) -> dict[str, Any]:
    return {
        "kind": schedule.kind,
        "candidate_strategy": schedule.candidate_strategy,
        "candidate_registered_server_id": schedule.candidate_server_id,
        "switch_back": schedule.switch_back,
        "source_registered_server_id": schedule.source_server_id,
        "webhook_url": schedule.webhook_url,
    }


class DrillService:
    def __init__(self, session: AsyncSession, settings: Settings | None = None):
        self.session = session
        #: The webhook policy's allow-list, for schedules created or changed.
        self.settings = settings
        self.clusters = ClusterService(session)
        self.drills = DrillRepository(session)
        self.servers = ServerRepository(session)

    # -- schedules -------------------------------------------------------------------------------------------

    async def schedules(self, cluster_id: int) -> Sequence[DrillSchedule]:
        await self.clusters.get(cluster_id)
        return await self.drills.schedules(cluster_id)

    async def schedule(self, cluster_id: int, schedule_id: int) -> DrillSchedule:
        await self.clusters.get(cluster_id)
        schedule = await self.drills.schedule(cluster_id, schedule_id)
        if schedule is None:
            raise NotFound(
                f"drill schedule {schedule_id} does not exist in cluster {cluster_id}", code="drill_schedule_not_found"
            )
        return schedule

    async def create_schedule(self, cluster_id: int, data: DrillScheduleCreate) -> DrillSchedule:
        await self.clusters.get(cluster_id)
        if await self.drills.schedule_by_name(cluster_id, data.name) is not None:
            raise Conflict(f"cluster {cluster_id} has a drill schedule named {data.name!r}", code="drill_name_taken")
        await self._candidate_exists(cluster_id, data.candidate_registered_server_id)
        await self._candidate_exists(cluster_id, data.source_registered_server_id, "source_registered_server_id")
        self._check_webhook(data.webhook_url)
        schedule = DrillSchedule(cluster_id=cluster_id, **_columns(data.model_dump()))
        self._reschedule(schedule, datetime.now(UTC))
        await self.drills.add(schedule)
        return schedule

    async def update_schedule(self, cluster_id: int, schedule_id: int, data: DrillScheduleUpdate) -> DrillSchedule:
        schedule = await self.schedule(cluster_id, schedule_id)
        changes = _columns(data.model_dump(exclude_unset=True))
        for required in ("cron", "timezone", "enabled", "kind", "candidate_strategy", "switch_back"):
            if required in changes and changes[required] is None:
                raise Conflict(f"a drill schedule's {required} cannot be removed", code="field_required")
        self._check_webhook(changes.get("webhook_url"))
        for key, value in changes.items():
            setattr(schedule, key, value)
        if schedule.candidate_strategy == "fixed" and schedule.candidate_server_id is None:
            raise AppError("candidate_strategy 'fixed' needs candidate_registered_server_id", code="candidate_required")
        await self._candidate_exists(cluster_id, schedule.candidate_server_id)
        await self._candidate_exists(cluster_id, schedule.source_server_id, "source_registered_server_id")
        self._reschedule(schedule, datetime.now(UTC))
        await self.drills.flush()
        return schedule

    def _check_webhook(self, url: str | None) -> None:
        if url is not None:
            policy = WebhookPolicy.of(self.settings.webhooks.allowed_hosts if self.settings else ())
            check_webhook(policy, url, "webhook_url")

    async def delete_schedule(self, cluster_id: int, schedule_id: int) -> None:
        await self.drills.delete(await self.schedule(cluster_id, schedule_id))

    def _reschedule(self, schedule: DrillSchedule, now: datetime) -> None:
        upcoming = next_runs(schedule.cron, schedule.timezone, now, 1)
        schedule.next_run_at = upcoming[0] if schedule.enabled and upcoming else None

    async def _candidate_exists(
        self, cluster_id: int, server_id: int | None, field: str = "candidate_registered_server_id"
    ) -> None:
        if server_id is not None and await self.servers.get(cluster_id, server_id) is None:
            raise NotFound(
                f"{field} {server_id}: {unknown_server(server_id)} does not exist in cluster {cluster_id}",
                code="server_not_found",
            )

    # -- runs ------------------------------------------------------------------------------------------------

    async def runs(self, cluster_id: int, limit: int, before_id: int | None = None) -> Sequence[DrillRun]:
        await self.clusters.get(cluster_id)
        return await self.drills.runs(cluster_id, limit, before_id)

    async def run(self, cluster_id: int, run_id: int) -> DrillRun:
        await self.clusters.get(cluster_id)
        run = await self.drills.run(cluster_id, run_id)
        if run is None:
            raise NotFound(f"drill run {run_id} does not exist in cluster {cluster_id}", code="drill_run_not_found")
        return run

    async def run_now(
        self, runner: OperationRunner, settings: Settings, cluster_id: int, data: DrillRunCreate, requester: str
    ) -> DrillRun:
        await self.clusters.get(cluster_id)
        schedule_id = data.schedule_id
        if schedule_id is not None:
            plan = plan_of(await self.schedule(cluster_id, schedule_id))
        else:
            plan = data.model_dump(exclude={"schedule_id"})
            await self._candidate_exists(cluster_id, plan["candidate_registered_server_id"])
            if plan.get("webhook_url"):
                check_webhook(WebhookPolicy.of(settings.webhooks.allowed_hosts), plan["webhook_url"], "webhook_url")
        return await self.start(runner, settings, cluster_id, plan, requester, schedule_id)

    async def dry_run(
        self, runner: OperationRunner, settings: Settings, cluster_id: int, data: DrillRunCreate, requester: str
    ) -> Operation:
        """What a drill with this plan (or this schedule's) would do, changing nothing. A switchover drill: a
        switchover dry run from its source to the candidate it would take (fixed, or the next in rotation after the
        last drill's, from the collector's last view of the links), whose result has the preflight checks and the
        plan per domain. A failover drill: a `drill` dry run, its preflight only (the candidate, the replicas that
        cannot replace the master and why, the candidate's checks; refused when none keeps every domain). No drill
        run is recorded."""
        await self.clusters.get(cluster_id)
        if data.schedule_id is not None:
            plan = plan_of(await self.schedule(cluster_id, data.schedule_id))
        else:
            plan = data.model_dump(exclude={"schedule_id"})
            await self._candidate_exists(cluster_id, plan["candidate_registered_server_id"])
            await self._candidate_exists(
                cluster_id, plan.get("source_registered_server_id"), "source_registered_server_id"
            )
        if plan.get("kind") == "failover":
            operation, _ = await OperationService(self.session).start(
                runner, settings, cluster_id=cluster_id, type_="drill", params=DrillParams(**plan), dry_run=True,
                requester=requester,
            )  # fmt: skip
            return operation
        source = plan.get("source_registered_server_id")
        candidate = plan["candidate_registered_server_id"] if plan["candidate_strategy"] == "fixed" else None
        if candidate is None:
            candidate = await self._next_in_rotation(cluster_id, source)
        operation, _ = await OperationService(self.session).start(
            runner,
            settings,
            cluster_id=cluster_id,
            type_="switchover",
            params=SwitchoverParams(candidate_registered_server_id=candidate, source_registered_server_id=source),
            dry_run=True,
            requester=requester,
        )
        return operation

    async def _next_in_rotation(self, cluster_id: int, source: int | None) -> int | None:
        """The replica a rotation drill would take next, from the collector's last view: among the running, not in
        maintenance, not fenced, not delayed replicas of the source (the one master when not named), the first with
        an id above the last drill's candidate, wrapping. None when that is not clear (the switchover then picks the
        best)."""
        links = [
            link for link in await LinkRepository(self.session).list_for_cluster(cluster_id)
            if link.source == LinkSource.replica and link.master_server_id is not None
        ]  # fmt: skip
        if source is None:
            replicas = {link.replica_server_id for link in links}
            roots = {link.master_server_id for link in links} - replicas
            if len(roots) != 1:
                return None
            source = roots.pop()
        servers = {s.id: s for s in await ServerRepository(self.session).list_for_cluster(cluster_id)}
        eligible = sorted(
            link.replica_server_id for link in links
            if link.master_server_id == source and link.running and link.last_error_code is None
            and not (link.settings or {}).get("delay_s")
            and (s := servers.get(link.replica_server_id)) is not None and not s.maintenance and not s.fenced
        )  # fmt: skip
        if not eligible:
            return None
        return next_in_rotation(eligible, await self.drills.last_candidate(cluster_id))

    async def start(
        self,
        runner: OperationRunner,
        settings: Settings,
        cluster_id: int,
        plan: dict[str, Any],
        requester: str,
        schedule_id: int | None = None,
    ) -> DrillRun:
        """Inserts the run and starts its operation (a busy cluster raises Conflict: nothing is inserted)."""
        run = DrillRun(
            cluster_id=cluster_id, schedule_id=schedule_id, requester=requester, state="pending", reasons=[],
            details={}, kind=plan.get("kind", "switchover"),
        )  # fmt: skip
        await self.drills.add(run)
        operation, _ = await OperationService(self.session).start(
            runner,
            settings,
            cluster_id=cluster_id,
            type_="drill",
            params=DrillParams(**plan, drill_run_id=run.id),
            dry_run=False,
            requester=requester,
        )
        run.operation_id = operation.id
        await self.drills.flush()
        return run

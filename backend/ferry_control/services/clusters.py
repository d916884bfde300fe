"""Clusters: create, read, update, delete; their write-only secrets (stored encrypted); and how a cluster is shown
to a caller (secrets as `…_set` flags, webhook URLs hidden from viewers)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.errors import Conflict, Forbidden, NotFound, Unprocessable
from ferry_control.core.outbound import WebhookPolicy
from ferry_control.core.secrets import SecretBox, SecretsUnavailable
from ferry_control.core.security import Role
from ferry_control.drivers.credentials import SECRET_FIELDS
from ferry_control.drivers.registry import plaintext_transport, secrets_refusal
from ferry_control.models import Cluster, OperationState
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.operations import OperationRepository
from ferry_control.schemas.cluster import REDACTED, ClusterCreate, ClusterRead, ClusterUpdate

#: Operation states that hold a cluster (deleting it or its servers meanwhile is refused).
BUSY_STATES = (OperationState.pending, OperationState.running)


class ClusterService:
    def __init__(self, session: AsyncSession, settings: Settings | None = None, secrets: SecretBox | None = None):
        self.clusters = ClusterRepository(session)
        self.operations = OperationRepository(session)
        #: Needed by create and update (webhook policy, secrets), not by reads.
        self.settings = settings
        self.secrets = secrets

    async def list(self) -> Sequence[Cluster]:
        return await self.clusters.list()

    async def get(self, cluster_id: int) -> Cluster:
        cluster = await self.clusters.get(cluster_id)
        if cluster is None:
            raise NotFound(f"cluster {cluster_id} does not exist", code="cluster_not_found")
        return cluster

    async def hold(self, cluster_id: int) -> None:
        """Holds the cluster's row against deletion for the rest of the transaction, before writing several of its
        rows (`ClusterRepository.hold`: a delete then waits for this transaction, never deadlocks with it); 404
        `cluster_not_found` when it was deleted meanwhile."""
        if not await self.clusters.hold([cluster_id]):
            raise NotFound(f"cluster {cluster_id} does not exist (deleted meanwhile)", code="cluster_not_found")

    async def exclude_writers(self, cluster_id: int) -> None:
        """Keeps the writers of the cluster's rows out for the rest of the transaction, before removing one of its
        servers (`ClusterRepository.exclude_writers`)."""
        await self.clusters.exclude_writers(cluster_id)

    async def find_by_name(self, name: str) -> Cluster | None:
        return await self.clusters.get_by_name(name)

    async def create(self, data: ClusterCreate, caller: Role = Role.admin) -> Cluster:
        """`caller` is the role of the token asking (the command line acts as the machine's owner: admin)."""
        if not data.enforce_read_only_replicas:
            _guard_off_needs_admin(caller, data.name)
        await self._name_free(data.name)
        fields = data.model_dump(exclude=set(SECRET_FIELDS))
        self._check_webhooks(fields)
        cluster = Cluster(**fields)
        self._store_secrets(cluster, _secret_changes(data))
        return await self.clusters.add(cluster)

    async def update(self, cluster_id: int, data: ClusterUpdate, caller: Role = Role.admin) -> Cluster:
        """`caller` is the role of the token asking (the command line acts as the machine's owner: admin). 409
        `operation_running` while an operation holds the cluster: it acts on the settings and credentials it read."""
        cluster = await self.get(cluster_id)
        await self.refuse_while_busy(cluster_id, f"cluster {cluster.name!r} cannot be changed")
        changes = data.model_dump(exclude_unset=True, exclude=set(SECRET_FIELDS))
        if changes.get("enforce_read_only_replicas") is False and cluster.enforce_read_only_replicas:
            _guard_off_needs_admin(caller, cluster.name)
        required_fields = (
            "auto_failover", "auto_rejoin", "enforce_read_only_replicas", "candidate_labels", "pre_operation_webhooks",
            "post_operation_webhooks",
        )  # fmt: skip
        for required in required_fields:
            if required in changes and changes[required] is None:
                raise Conflict(f"a cluster's {required} cannot be removed; set it instead", code="field_required")
        if "name" in changes and changes["name"] != cluster.name:
            if changes["name"] is None:
                raise Conflict("a cluster's name cannot be removed", code="cluster_name_required")
            await self._name_free(changes["name"])
        self._check_webhooks(changes)
        secret_changes = _secret_changes(data)
        if secret_changes:
            self._store_secrets(cluster, secret_changes)
        for key, value in changes.items():
            setattr(cluster, key, value)
        await self.clusters.flush()
        return cluster

    async def acknowledge_failover(self, cluster_id: int) -> Cluster:
        """An operator has looked at the last failover: automatic failover may run again (after the cool-down)."""
        cluster = await self.get(cluster_id)
        if cluster.failover_suspended_at is None:
            raise Conflict(
                f"cluster {cluster_id} has no failover to acknowledge: automatic failover is not suspended",
                code="nothing_to_acknowledge",
            )
        cluster.failover_suspended_at = None
        await self.clusters.flush()
        return cluster

    async def delete(self, cluster_id: int) -> None:
        cluster = await self.get(cluster_id)
        await self.refuse_while_busy(cluster_id, f"cluster {cluster_id} cannot be deleted")
        await self.clusters.delete(cluster)

    async def refuse_while_busy(self, cluster_id: int, what: str) -> None:
        """409 `operation_running` while an operation holds the cluster. Takes the cluster's operation lock row for
        the rest of the transaction, so no operation can start until the caller's change is committed."""
        lock = await self.clusters.lock_for_operation(cluster_id)
        if lock is None or lock.operation_id is None:
            return
        holder = await self.operations.get_any(lock.operation_id)
        alive = lock.lease_expires_at is not None and lock.lease_expires_at > datetime.now(UTC)
        if holder is not None and holder.state in BUSY_STATES and alive:
            raise Conflict(
                f"{what} while operation {holder.id} ({holder.type}) is {holder.state.value} on it; "
                "wait for it to end or cancel it",
                code="operation_running",
                details={"operation_id": holder.id, "type": holder.type, "state": holder.state.value},
            )

    async def rotate_secrets(self) -> int:
        """Re-encrypts every cluster's stored secrets under the first configured key; returns how many. Run after
        putting a new key first in FERRY_SECRET_KEYS, before removing the old one."""
        if self.secrets is None:
            raise Conflict("no secret key is configured (FERRY_SECRET_KEYS)", code="secrets_unavailable")
        rotated = 0
        for cluster in await self.clusters.list():
            if cluster.credentials_ciphertext:
                try:
                    cluster.credentials_ciphertext = self.secrets.rotate(cluster.credentials_ciphertext)
                except SecretsUnavailable as e:
                    raise Conflict(f"cluster {cluster.name!r}: {e}", code="secrets_unavailable") from e
                rotated += 1
            if cluster.host_access_key_ciphertext:
                # The host access's private key (services/host_access.py) is one more secret of the cluster.
                try:
                    cluster.host_access_key_ciphertext = self.secrets.rotate(cluster.host_access_key_ciphertext)
                except SecretsUnavailable as e:
                    raise Conflict(f"cluster {cluster.name!r}: {e}", code="secrets_unavailable") from e
        await self.clusters.flush()
        return rotated

    def present(self, cluster: Cluster, role: Role) -> ClusterRead:
        """The cluster as `role` may see it: secrets only as `…_set`, webhook URLs hidden from viewers."""
        read = ClusterRead.model_validate(cluster)
        stored = self._stored_secrets(cluster, strict=False)
        for name in SECRET_FIELDS:
            setattr(read, f"{name}_set", stored.get(name) is not None)
        read.plaintext_transport = plaintext_transport(self.settings, stored)
        if not role.allows(Role.operator):
            read.pre_operation_webhooks = [REDACTED for _ in read.pre_operation_webhooks]
            read.post_operation_webhooks = [REDACTED for _ in read.post_operation_webhooks]
        return read

    def _check_webhooks(self, fields: dict[str, Any]) -> None:
        policy = WebhookPolicy.of(self.settings.webhooks.allowed_hosts if self.settings else ())
        for key in ("pre_operation_webhooks", "post_operation_webhooks"):
            for index, url in enumerate(fields.get(key) or []):
                check_webhook(policy, url, f"{key}.{index}")

    def _stored_secrets(self, cluster: Cluster, *, strict: bool = True) -> dict[str, Any]:
        if not cluster.credentials_ciphertext:
            return {}
        if self.secrets is None:
            if strict:
                raise Conflict("no secret key is configured (FERRY_SECRET_KEYS)", code="secrets_unavailable")
            return dict.fromkeys(SECRET_FIELDS, "?")
        try:
            return self.secrets.decrypt(cluster.credentials_ciphertext)
        except SecretsUnavailable as e:
            if strict:
                raise Conflict(str(e), code="secrets_unavailable") from e
            return dict.fromkeys(SECRET_FIELDS, "?")

    def _store_secrets(self, cluster: Cluster, changes: dict[str, str | None]) -> None:
        if not changes:
            return
        refusal = secrets_refusal(changes)
        if refusal is not None:
            raise Unprocessable(refusal, code="validation_error")
        values = {**self._stored_secrets(cluster), **changes}
        values = {k: v for k, v in values.items() if v is not None}
        if not values:
            cluster.credentials_ciphertext = None
            return
        if self.secrets is None:
            raise Conflict(
                "cannot store the cluster's secrets: no secret key is configured (set FERRY_SECRET_KEYS)",
                code="secrets_unavailable",
            )
        cluster.credentials_ciphertext = self.secrets.encrypt(values)

    async def _name_free(self, name: str) -> None:
        existing = await self.clusters.get_by_name(name)
        if existing is not None:
            raise Conflict(f"a cluster named {name!r} exists already (id {existing.id})", code="cluster_name_taken")


def check_webhook(policy: WebhookPolicy, url: str, where: str) -> None:
    """422 when the policy refuses the URL's target outright (checked again, after DNS, at each call)."""
    refusal = policy.refusal_at_registration(url)
    if refusal is not None:
        raise Unprocessable(f"{where}: webhook refused: {refusal}", code="webhook_refused")


def _guard_off_needs_admin(caller: Role, cluster: str) -> None:
    """Turning the replica guard off (enforce_read_only_replicas false) disables a safety guard: an admin's call."""
    if not caller.allows(Role.admin):
        raise Forbidden(
            f"turning enforce_read_only_replicas off for cluster {cluster!r} needs an admin token (this one is "
            f"{caller.value}): it lets a replica stay writable, so clients may write to it and split the cluster's "
            "history; nothing was changed",
            code="guard_off_needs_admin",
        )


def _secret_changes(data: ClusterCreate | ClusterUpdate) -> dict[str, str | None]:
    """The secrets the request sets (their values) or removes (None)."""
    changes: dict[str, str | None] = {}
    for name in SECRET_FIELDS:
        if name in data.model_fields_set:
            value = getattr(data, name)
            changes[name] = value.get_secret_value() if isinstance(value, SecretStr) else None
    return changes

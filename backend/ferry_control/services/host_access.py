"""A cluster's host access (schemas/host_access.py): read by every role without the key, set and cleared by admins
only; the private key checked (422 naming why) and stored encrypted as the cluster's credentials are, never returned.
The audit row of a change says which settings and whether the key was set, kept or cleared — never the key."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.errors import Conflict, NotFound, Unprocessable
from ferry_control.core.secrets import SecretBox, SecretsUnavailable
from ferry_control.models import Cluster
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.schemas.host_access import HostAccessRead, HostAccessSettings, HostAccessWrite
from ferry_control.services.clusters import ClusterService
from ferry_control.services.ssh_keys import fingerprint, known_hosts_refusal, private_key_refusal


class HostAccessService:
    def __init__(self, session: AsyncSession, secrets: SecretBox | None = None):
        self.session = session
        self.clusters = ClusterRepository(session)
        self.secrets = secrets

    async def _cluster(self, cluster_id: int) -> Cluster:
        cluster = await self.clusters.get(cluster_id)
        if cluster is None:
            raise NotFound(f"cluster {cluster_id} does not exist", code="cluster_not_found")
        return cluster

    async def get(self, cluster_id: int) -> HostAccessRead:
        cluster = await self._cluster(cluster_id)
        if cluster.host_access is None:
            raise NotFound(
                f"cluster {cluster.name!r} has no host access set (PUT …/host-access, an admin's call)",
                code="host_access_not_set",
            )
        return self.present(cluster)

    def present(self, cluster: Cluster) -> HostAccessRead:
        assert cluster.host_access is not None
        key = self._key(cluster, strict=False)
        return HostAccessRead(
            **HostAccessSettings.model_validate(cluster.host_access).model_dump(),
            private_key_set=cluster.host_access_key_ciphertext is not None,
            public_key_fingerprint=None if key is None else fingerprint(key),
        )

    async def put(self, cluster_id: int, data: HostAccessWrite) -> tuple[HostAccessRead, dict[str, Any]]:
        """Sets the cluster's host access; returns it and what the audit row says of the change."""
        cluster = await self._cluster(cluster_id)
        await ClusterService(self.session).refuse_while_busy(cluster_id, f"cluster {cluster.name!r}'s host access "
                                                             "cannot be changed")  # fmt: skip
        refusal = known_hosts_refusal(data.known_hosts)
        if refusal is not None:
            raise Unprocessable(refusal, code="host_access_invalid")
        key_change = "kept"
        if data.private_key is not None:
            refusal = private_key_refusal(data.private_key.get_secret_value())
            if refusal is not None:
                raise Unprocessable(refusal, code="host_access_invalid")
            if self.secrets is None:
                raise Conflict(
                    "cannot store the private key: no secret key is configured (set FERRY_SECRET_KEYS)",
                    code="secrets_unavailable",
                )
            cluster.host_access_key_ciphertext = self.secrets.encrypt(
                {"private_key": data.private_key.get_secret_value()}
            )
            key_change = "set"
        elif cluster.host_access_key_ciphertext is None:
            raise Unprocessable(
                "private_key is required: the cluster has no key stored yet", code="host_access_invalid"
            )
        settings = HostAccessSettings.model_validate(data.model_dump(exclude={"private_key"}))
        cluster.host_access = settings.model_dump(mode="json")
        await self.clusters.flush()
        audit = {"host_access": {**settings.model_dump(mode="json", exclude={"known_hosts"}), "private_key": key_change,
                                 "known_hosts_lines": len(settings.known_hosts.splitlines())}}  # fmt: skip
        return self.present(cluster), audit

    async def clear(self, cluster_id: int) -> None:
        cluster = await self._cluster(cluster_id)
        await ClusterService(self.session).refuse_while_busy(cluster_id, f"cluster {cluster.name!r}'s host access "
                                                             "cannot be cleared")  # fmt: skip
        if cluster.host_access is None and cluster.host_access_key_ciphertext is None:
            raise NotFound(f"cluster {cluster.name!r} has no host access set", code="host_access_not_set")
        cluster.host_access, cluster.host_access_key_ciphertext = None, None
        await self.clusters.flush()

    async def rotate(self, cluster: Cluster) -> bool:
        """Re-encrypts the stored key under the first configured key (the credentials' rotation does this too)."""
        if cluster.host_access_key_ciphertext is None or self.secrets is None:
            return False
        cluster.host_access_key_ciphertext = self.secrets.rotate(cluster.host_access_key_ciphertext)
        return True

    def _key(self, cluster: Cluster, *, strict: bool = True) -> str | None:
        if cluster.host_access_key_ciphertext is None:
            return None
        if self.secrets is None:
            if strict:
                raise Conflict("no secret key is configured (FERRY_SECRET_KEYS)", code="secrets_unavailable")
            return None
        try:
            value = self.secrets.decrypt(cluster.host_access_key_ciphertext).get("private_key")
        except SecretsUnavailable as e:
            if strict:
                raise Conflict(str(e), code="secrets_unavailable") from e
            return None
        return value if isinstance(value, str) else None

"""What a driver may present to the servers of one cluster: that cluster's decrypted secrets, never another's.

Built by the driver factory from the cluster's stored (encrypted) credentials; `repr` shows which fields are set,
never their values, so a credentials object in a log line or a traceback leaks nothing."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

#: The secrets a cluster may carry, as the API names them (all write-only).
SECRET_FIELDS = ("node_token", "db_user", "db_password", "replication_user", "replication_password", "tls_ca")


@dataclass(frozen=True, repr=False)
class ServerCredentials:
    #: Bearer token for a ferryd node's mutating admin calls (else the fleet's FERRY_NODE_TOKEN).
    node_token: str | None = None
    #: The control plane's own login on a MariaDB server (status, read-only, CHANGE MASTER…).
    db_user: str | None = None
    db_password: str | None = None
    #: The login replicas use to connect to their master (written into CHANGE MASTER).
    replication_user: str | None = None
    replication_password: str | None = None
    #: CA certificate (PEM text) the MariaDB servers' certificates are verified against; None: no TLS.
    tls_ca: str | None = None

    @classmethod
    def of(cls, values: dict[str, Any]) -> ServerCredentials:
        return cls(**{k: values[k] for k in SECRET_FIELDS if values.get(k) is not None})

    def __repr__(self) -> str:
        present = [f.name for f in fields(self) if getattr(self, f.name) is not None]
        return f"ServerCredentials(set={present})"

    __str__ = __repr__


NO_CREDENTIALS = ServerCredentials()

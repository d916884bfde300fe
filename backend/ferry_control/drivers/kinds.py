"""What the control plane must know of a server kind beyond talking to one server: what its servers refuse of a
cluster's secrets, whether the control plane speaks to them in clear text, and whether the fleet's settings give
them credentials of their own. Each driver module states its kind's rules (`ferry.FerryRules`,
`mariadb.MariadbRules`); `drivers.registry` holds them by kind, so services ask the registry and name no kind."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import ClassVar

from ferry_control.core.config import Settings


class KindRules(abc.ABC):
    """One server kind's credential and transport rules."""

    #: Which `ServerKind` the rules are of.
    kind: ClassVar[str]
    #: The fleet's settings give every server of the kind credentials (ferryd: FERRY_NODE_TOKEN), so a server's
    #: address receives secrets even when its cluster stores none.
    fleet_credentials: ClassVar[bool] = False

    def secrets_refusal(self, secrets: Mapping[str, str | None]) -> str | None:
        """Why storing `secrets` (a cluster's secrets as the API names them, None: removed) would give the kind's
        servers credentials they refuse, in words naming the field; None when they would not."""
        return None

    @abc.abstractmethod
    def plaintext(self, settings: Settings | None, secrets: Mapping[str, object]) -> bool:
        """Whether the control plane speaks to the kind's servers of a cluster holding `secrets` (the names of the
        stored ones) in clear text under `settings`."""

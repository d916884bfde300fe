"""Every server kind's rules (`kinds.KindRules`), by kind: the one place the control plane's services ask what a
kind needs of a cluster's secrets and its transport, without naming a kind. The driver factory builds the drivers
of the same kinds."""

from __future__ import annotations

from collections.abc import Mapping

from ferry_control.core.config import Settings
from ferry_control.drivers.ferry import FerryRules
from ferry_control.drivers.kinds import KindRules
from ferry_control.drivers.mariadb import MariadbRules
from ferry_control.models import ServerKind

#: The rules of each kind the factory has a driver for.
RULES: dict[ServerKind, KindRules] = {ServerKind.ferry: FerryRules(), ServerKind.mariadb: MariadbRules()}


def secrets_refusal(secrets: Mapping[str, str | None]) -> str | None:
    """Why a cluster's secrets would be refused by the servers of some kind (see `KindRules.secrets_refusal`)."""
    return next((why for rules in RULES.values() if (why := rules.secrets_refusal(secrets)) is not None), None)


def plaintext_transport(settings: Settings | None, secrets: Mapping[str, object]) -> bool:
    """Whether the control plane speaks to some kind of a cluster's servers in clear text (a cluster may hold
    servers of every kind)."""
    return any(rules.plaintext(settings, secrets) for rules in RULES.values())


def credentials_follow_address(kind: ServerKind, cluster_has_secrets: bool) -> bool:
    """Whether the control plane sends credentials to a server of `kind`'s address: its cluster's stored secrets,
    or the fleet's own credentials for the kind."""
    return cluster_has_secrets or RULES[kind].fleet_credentials

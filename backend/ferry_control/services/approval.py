"""Whose say lets the control plane connect to a server's address — and so send it its cluster's credentials (the
node token as a bearer token, a MariaDB login's scramble): an admin's token, or the deployment's allow-list
`server_trusted_hosts` (exact host names, and CIDR networks an IP-literal host falls in). A server an operator
registers, discovers or moves anywhere else is pending: nothing connects to it until an admin approves it."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from ferry_control.core.outbound import parse_ip
from ferry_control.core.security import Role
from ferry_control.models import Server
from ferry_control.models.base import utcnow

#: Who approved a server the allow-list names (`approved_by`).
BY_TRUSTED_HOSTS = "server_trusted_hosts"


@dataclass(frozen=True)
class Approver:
    """Who registers, discovers or moves a server: a token's name and role."""

    name: str
    role: Role


@dataclass(frozen=True)
class TrustedHosts:
    """The deployment's allow-list of server addresses."""

    names: frozenset[str]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    @classmethod
    def of(cls, entries: Iterable[str]) -> TrustedHosts:
        names, networks = set(), []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                names.add(entry.lower().rstrip("."))
        return cls(frozenset(names), tuple(networks))

    def trusts(self, host: str) -> bool:
        """An IP literal inside a listed network, or a host name listed exactly (a name is never resolved here:
        listing a network trusts addresses, not names that may resolve into it)."""
        ip = parse_ip(host)
        if ip is None:
            return host.lower().rstrip(".") in self.names
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self.networks)


def approver_of(host: str, by: Approver, trusted: TrustedHosts) -> str | None:
    """Who approves `host` when `by` gives it: `by` when an admin, the allow-list when it names the host, else no
    one (the server is pending)."""
    if by.role.allows(Role.admin):
        return by.name
    return BY_TRUSTED_HOSTS if trusted.trusts(host) else None


def approve_address(server: Server, by: Approver, trusted: TrustedHosts) -> None:
    """Sets `server`'s approval for the address it has now (see `approver_of`); an approval given to another
    address does not carry over."""
    approver = approver_of(server.host, by, trusted)
    server.approved_by, server.approved_at = approver, (None if approver is None else utcnow())


def pending_reason(server: Server) -> str:
    """What a pending server's record and notes say."""
    return (
        f"{server.label} is pending: its address was given by an operator and is not in server_trusted_hosts, so "
        "nothing connects to it until an admin approves it (POST …/servers/{id}/approve)"
    )


#: Whoever runs the command line (`cli bootstrap`, `cli register`) has the database and the keys: an admin's say.
COMMAND_LINE = Approver("command line", Role.admin)

"""Where the control plane may send requests: server addresses (a host name or an IP literal, nothing else) and
webhook targets (public addresses only, unless the operator's allow-list names the host or its network).

A webhook is checked twice: when it is registered (its syntax, and its host when that is an IP literal or a
local name) and when it is called, after DNS resolution, against every address the name resolves to — the call
then goes to the address that was checked, so a name cannot resolve to something else in between."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: A DNS label (underscores accepted: container and service names use them).
_LABEL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
HOST_CHARS_MAX = 253
#: Names that always mean this machine or a cloud's metadata service, whatever DNS says.
LOCAL_NAMES = ("localhost", "localhost.localdomain", "metadata", "metadata.google.internal")


def parse_ip(text: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def check_host(host: str) -> str:
    """A server's host: a host name or an IP literal (an IPv6 one with or without brackets; kept without) —
    no scheme, port, path, user or spaces. Raises ValueError saying what is wrong."""
    candidate = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    ip = parse_ip(candidate)
    if ip is not None:
        return str(ip)
    if host.startswith("["):
        raise ValueError("brackets hold an IPv6 address only")
    if "://" in host:
        raise ValueError("a host, not a URL: leave out the scheme")
    if any(c in host for c in "/?#@:") or any(c.isspace() for c in host):
        raise ValueError("a host name or IP address only: no port, path, user or spaces")
    if len(host) > HOST_CHARS_MAX or not all(_LABEL.match(label) for label in host.split(".")):
        raise ValueError("not a valid host name (letters, digits, '-' and '_' in dot-separated labels)")
    if re.fullmatch(r"[0-9.]+", host):
        raise ValueError("not a valid IPv4 address")
    return host


def check_webhook_syntax(url: str) -> str:
    """A webhook URL's shape: http(s), a valid host, a port in range. Raises ValueError."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise ValueError(f"not a valid URL: {e}") from e
    if parts.scheme not in ("http", "https"):
        raise ValueError("only http and https webhooks")
    if not parts.hostname:
        raise ValueError("the URL has no host")
    check_host(parts.hostname)
    if port is not None and not 1 <= port <= 65535:
        raise ValueError("port out of range")
    return url


def redact_url(url: str) -> str:
    """What may be shown of a URL where its secrets may not: scheme, host and port (no user, path or query)."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "[invalid URL]"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}"


@dataclass(frozen=True)
class WebhookPolicy:
    """Which webhook targets are allowed: public addresses, plus the allow-listed names and networks."""

    allowed_names: frozenset[str]
    allowed_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    @classmethod
    def of(cls, allowed_hosts: Iterable[str]) -> WebhookPolicy:
        names, networks = set(), []
        for entry in allowed_hosts:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                names.add(entry.lower().rstrip("."))
        return cls(frozenset(names), tuple(networks))

    def name_allowed(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.allowed_names

    def refusal_for_address(self, ip: IpAddress) -> str | None:
        """Why a call to this address is refused, or None when it is allowed."""
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if any(ip in network for network in self.allowed_networks):
            return None
        if ip.is_global and not ip.is_multicast:
            return None
        kind = (
            "loopback" if ip.is_loopback
            else "unspecified" if ip.is_unspecified
            else "link-local (cloud metadata)" if ip.is_link_local
            else "multicast" if ip.is_multicast
            else "private or reserved"
        )  # fmt: skip
        return f"{ip} is a {kind} address (add it to webhook_allowed_hosts to allow it)"

    def refusal_at_registration(self, url: str) -> str | None:
        """What can be judged without DNS: IP literals and names that always mean this machine."""
        host = (urlsplit(url).hostname or "").lower()
        if self.name_allowed(host):
            return None
        ip = parse_ip(host)
        if ip is not None:
            return self.refusal_for_address(ip)
        if host.rstrip(".") in LOCAL_NAMES or host.rstrip(".").endswith(".localhost"):
            return f"{host} names this machine or a metadata service (add it to webhook_allowed_hosts to allow it)"
        return None

"""The address a request came from, as the failed-authentication limiter counts it: the TCP peer — unless the peer
is one of the deployment's trusted proxies (`trusted_proxies`: IP addresses and CIDR networks), whose
X-Forwarded-For is then read from its end: the nearest address in it that is not itself a trusted proxy. Nobody
else's X-Forwarded-For is believed (a client naming any address it likes would escape its limit), and a header
that does not parse leaves the proxy's own address."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from ferry_control.core.outbound import IpAddress, parse_ip

#: Most addresses of an X-Forwarded-For read (from its end); a longer chain is not followed further.
FORWARDED_HOPS_MAX = 16


@dataclass(frozen=True)
class TrustedProxies:
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    @classmethod
    def of(cls, entries: Iterable[str]) -> TrustedProxies:
        return cls(tuple(ipaddress.ip_network(entry, strict=False) for entry in entries))

    def trusts(self, ip: IpAddress) -> bool:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self.networks)

    def client_of(self, peer: str | None, forwarded_for: Iterable[str]) -> str:
        """Who sent the request: `peer` (the TCP peer's address), or — when that is a trusted proxy — the nearest
        untrusted address its X-Forwarded-For headers (every one, in order) name."""
        if peer is None:
            return "unknown"
        ip = parse_ip(peer)
        if ip is None or not self.trusts(ip):
            return peer
        hops = [hop.strip() for header in forwarded_for for hop in header.split(",")]
        client = peer
        for hop in reversed(hops[-FORWARDED_HOPS_MAX:]):
            hop_ip = parse_ip(hop[1:-1] if hop.startswith("[") and hop.endswith("]") else hop)
            if hop_ip is None:
                return client  # not an address: what is before it is not followed
            client = str(hop_ip)
            if not self.trusts(hop_ip):
                return client
        return client

"""Reading the addresses servers report: `host:port` into checked pairs (how connections name their master,
matched to registered servers)."""

from __future__ import annotations

from ferry_control.core.outbound import check_host


def split_address(address: str) -> tuple[str, int] | None:
    """`host:port` → (host, port); None when it is not one (a valid host name or IP literal, a port in range)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        return None
    try:
        return check_host(host), int(port)
    except ValueError:
        return None

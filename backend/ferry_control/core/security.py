"""API tokens: generated with 256 bits of randomness, shown once, stored only as an HMAC-SHA256 digest.

A token reads `ferry_<43 url-safe characters>`; its first characters (`display_prefix`) are kept in clear so an
operator can tell tokens apart in listings. The digest is keyed with the server's pepper (a setting), so a copy
of the token table alone cannot be used to test guesses.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets

TOKEN_PREFIX = "ferry_"
#: Random bytes in a token (256 bits).
TOKEN_RANDOM_BYTES = 32
#: Characters of a token kept in clear for display.
DISPLAY_PREFIX_CHARS = len(TOKEN_PREFIX) + 6


class Role(enum.StrEnum):
    """What a token may do: viewers read, operators change clusters, admins also manage tokens."""

    viewer = "viewer"
    operator = "operator"
    admin = "admin"

    @property
    def rank(self) -> int:
        return {Role.viewer: 0, Role.operator: 1, Role.admin: 2}[self]

    def allows(self, required: Role) -> bool:
        return self.rank >= required.rank

    @property
    def capabilities(self) -> list[Capability]:
        """What this role may do, least first."""
        return [c for c in Capability if self.allows(c.least_role)]


class Capability(enum.StrEnum):
    """A named permission, for clients that show or hide controls without knowing how roles rank."""

    #: Read clusters, servers, topology, positions, operations, drills and the audit log.
    can_read = "can_read"
    #: Change clusters and servers, start operations and drills.
    can_operate = "can_operate"
    #: Manage API tokens.
    can_admin = "can_admin"

    @property
    def least_role(self) -> Role:
        return {
            Capability.can_read: Role.viewer,
            Capability.can_operate: Role.operator,
            Capability.can_admin: Role.admin,
        }[self]


def generate_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_RANDOM_BYTES)


def hash_token(token: str, pepper: str) -> str:
    """Hex HMAC-SHA256 of the token keyed by the pepper."""
    return hmac.new(pepper.encode(), token.encode(), hashlib.sha256).hexdigest()


def display_prefix(token: str) -> str:
    return token[:DISPLAY_PREFIX_CHARS]


def looks_like_token(token: str) -> bool:
    return token.startswith(TOKEN_PREFIX) and len(token) > DISPLAY_PREFIX_CHARS

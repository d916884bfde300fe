"""API tokens: a name, a role, and the token's keyed hash — never the token itself."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Enum, String
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.core.security import Role
from ferry_control.models.base import Base, utcnow


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    role: Mapped[Role] = mapped_column(Enum(Role, native_enum=False, create_constraint=True, length=16))
    #: HMAC-SHA256 (hex) of the token keyed by the pepper setting.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    #: The token's first characters, for telling tokens apart.
    display_prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)
    #: After this the token is refused (401). None: it does not expire.
    expires_at: Mapped[datetime | None] = mapped_column(default=None)

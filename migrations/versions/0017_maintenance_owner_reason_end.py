"""A server's maintenance gets who set it, why, since when and until when (it ends by itself then).

Servers in maintenance before this stay in maintenance, with the reason "set before reasons were recorded", no
owner and no end: an upgrade must not silently hand a server an operator had taken out back to failover; the
dashboard shows them as having no end, and an operator ends them (or sets them again with an end).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 14:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LEGACY_REASON = "set before reasons were recorded"


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("maintenance_owner", sa.String(100), nullable=True))
        batch.add_column(sa.Column("maintenance_reason", sa.Text(), nullable=True))
        batch.add_column(sa.Column("maintenance_since", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("maintenance_until", sa.DateTime(timezone=True), nullable=True))
    servers = sa.table("servers", sa.column("maintenance", sa.Boolean()), sa.column("maintenance_reason", sa.Text()))
    op.execute(servers.update().where(servers.c.maintenance.is_(True)).values(maintenance_reason=LEGACY_REASON))


def downgrade() -> None:
    # An expired maintenance is not one: what the old schema's flag would have kept as set is cleared.
    servers = sa.table(
        "servers", sa.column("maintenance", sa.Boolean()), sa.column("maintenance_until", sa.DateTime(timezone=True))
    )
    op.execute(
        servers.update()
        .where(servers.c.maintenance_until.is_not(None), servers.c.maintenance_until <= sa.func.current_timestamp())
        .values(maintenance=False)
    )
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("maintenance_until")
        batch.drop_column("maintenance_since")
        batch.drop_column("maintenance_reason")
        batch.drop_column("maintenance_owner")

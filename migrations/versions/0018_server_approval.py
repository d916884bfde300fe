"""A server gets who approved its address and when: the control plane connects to a server (and sends it its
cluster's credentials) only once an admin's token, or the deployment's `server_trusted_hosts`, approved where it is.

Servers registered before this keep being polled: they are approved as of the upgrade, by no one named (the
dashboard and API show `approved_by: null` for them), since an upgrade must not silently stop watching a fleet.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("approved_by", sa.String(100), nullable=True))
        batch.add_column(sa.Column("approved_at", sa.DateTime(timezone=True), nullable=True))
    servers = sa.table("servers", sa.column("approved_at", sa.DateTime(timezone=True)))
    op.execute(servers.update().values(approved_at=sa.func.current_timestamp()))


def downgrade() -> None:
    # The old schema polls every server: a pending one would be contacted, so pending servers go with the columns.
    servers = sa.table("servers", sa.column("approved_at", sa.DateTime(timezone=True)))
    op.execute(servers.delete().where(servers.c.approved_at.is_(None)))
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("approved_at")
        batch.drop_column("approved_by")

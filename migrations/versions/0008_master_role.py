"""A server's master-side settings as the collector last read them (MariaDB: semi-sync master enabled, timeout and
wait point), which a failover gives the new master when the old one no longer answers.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 06:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("master_role", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("master_role")

"""A replication link's settings as the replica reports them (delay, parallel apply, semi-sync role, filters), the
server's own words for what its applier is doing, and when its applied position last moved in each domain (a
stalled SQL side); a server's binlog format.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 12:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("binlog_format", sa.String(32), nullable=True))
    with op.batch_alter_table("replication_links") as batch:
        batch.add_column(sa.Column("settings", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("sql_state_detail", sa.Text(), nullable=True))
        batch.add_column(sa.Column("applied_moved_at", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("replication_links") as batch:
        batch.drop_column("applied_moved_at")
        batch.drop_column("sql_state_detail")
        batch.drop_column("settings")
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("binlog_format")

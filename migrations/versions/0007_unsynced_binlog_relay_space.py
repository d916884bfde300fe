"""What the collector reads of durability and bounds: whether a server sends transactions to its replicas before
they are durable in its own binlog (ferryd: durability none/network; MariaDB: sync_binlog != 1), and whether a
replica connection's receiving side waits for relay log space (at its space limit).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 06:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("replicas_may_be_ahead", sa.Boolean(), nullable=True))
    with op.batch_alter_table("replication_links") as batch:
        batch.add_column(sa.Column("waiting_for_relay_space", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("replication_links") as batch:
        batch.drop_column("waiting_for_relay_space")
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("replicas_may_be_ahead")

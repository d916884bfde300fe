"""What a server's last poll reported that an operator should look at, in words (semi-sync fallen back to
asynchronous; ferryd's binlog expiry holding a file back for a replica, or failing).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 06:55:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("warnings", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("warnings")

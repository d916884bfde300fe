"""When an operation last set a server's read-only flag itself, so an older poll does not overwrite it (proxies'
writer checks read the flag).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 09:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("read_only_set_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("read_only_set_at")

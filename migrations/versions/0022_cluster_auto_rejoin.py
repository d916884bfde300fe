"""A cluster setting `auto_rejoin`: a fenced former master that answers again rejoins by itself as a replica of the
new master when it has nothing the others lack. Off by default, and for existing clusters.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 19:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.add_column(sa.Column("auto_rejoin", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("auto_rejoin")

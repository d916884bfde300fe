"""A cluster setting `catch_up_parallel_workers`: during a switchover's or a drill's catch-up, the candidate's
parallel apply is raised to that many workers, and put back afterwards (0, the default: off).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28 15:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.add_column(sa.Column("catch_up_parallel_workers", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("catch_up_parallel_workers")

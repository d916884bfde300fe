"""A cluster setting `max_window_s`: the write-unavailability budget of the cluster's switchovers and drills (the
catch-up before the window waits until the predicted window fits it). Null, the default and what existing clusters
get: the control plane's `switchover_max_window_s`.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 18:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.add_column(sa.Column("max_window_s", sa.Double(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("max_window_s")

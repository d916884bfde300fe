"""The collector's failed polls, per server: each stored cycle keeps which servers it could not read and why
(`collector_cycles.failures`: a JSON list of {cluster_id, registered_server_id, error}, at most 100 a cycle; null
for the cycles stored before), so the collector page names the servers behind its failed-polls count.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("collector_cycles") as batch:
        batch.add_column(sa.Column("failures", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("collector_cycles") as batch:
        batch.drop_column("failures")

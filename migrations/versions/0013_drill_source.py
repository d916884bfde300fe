"""A drill schedule's source: the server whose role it moves (None: the cluster's only master), so an intermediate
master can be drilled.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 07:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("drill_schedules") as batch:
        batch.add_column(sa.Column("source_server_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_drill_schedules_source_server_id_servers", "servers", ["source_server_id"], ["id"], ondelete="SET NULL"
        )


def downgrade() -> None:
    with op.batch_alter_table("drill_schedules") as batch:
        batch.drop_constraint("fk_drill_schedules_source_server_id_servers", type_="foreignkey")
        batch.drop_column("source_server_id")

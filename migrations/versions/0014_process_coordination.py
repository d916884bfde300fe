"""The collector's recent cycles, shared by every process (the collector may run in a worker process), and the
events relayed between processes on SQLite; operations by state (a worker looks for pending ones).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 08:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "collector_cycles",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("instance_id", sa.String(length=200), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duration_s", sa.Double(), nullable=False),
        sa.Column("polled", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_collector_cycles")),
    )
    op.create_index(op.f("ix_collector_cycles_finished_at"), "collector_cycles", ["finished_at"])
    op.create_table(
        "relayed_events",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("origin", sa.String(length=200), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_relayed_events")),
    )
    op.create_index(op.f("ix_relayed_events_created_at"), "relayed_events", ["created_at"])
    op.create_index(op.f("ix_operations_state"), "operations", ["state"])


def downgrade() -> None:
    op.drop_index(op.f("ix_operations_state"), table_name="operations")
    op.drop_index(op.f("ix_relayed_events_created_at"), table_name="relayed_events")
    op.drop_table("relayed_events")
    op.drop_index(op.f("ix_collector_cycles_finished_at"), table_name="collector_cycles")
    op.drop_table("collector_cycles")

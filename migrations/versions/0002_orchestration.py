"""Orchestration: automatic failover switch, failover suspension and per-cluster webhooks on clusters; fencing on
servers; a lease on the per-cluster operation lock; who asked for a drill run.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 15:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.add_column(sa.Column("auto_failover", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("failover_suspended_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("last_failover_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("last_failover_operation_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("pre_operation_webhooks", sa.JSON(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("post_operation_webhooks", sa.JSON(), nullable=False, server_default="[]"))
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("fenced", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("fenced_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("fence_reason", sa.Text(), nullable=True))
    with op.batch_alter_table("operation_locks") as batch:
        batch.add_column(sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("drill_runs") as batch:
        batch.add_column(sa.Column("requester", sa.String(length=100), nullable=False, server_default="scheduler"))


def downgrade() -> None:
    with op.batch_alter_table("drill_runs") as batch:
        batch.drop_column("requester")
    with op.batch_alter_table("operation_locks") as batch:
        batch.drop_column("lease_expires_at")
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("fence_reason")
        batch.drop_column("fenced_at")
        batch.drop_column("fenced")
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("post_operation_webhooks")
        batch.drop_column("pre_operation_webhooks")
        batch.drop_column("last_failover_operation_id")
        batch.drop_column("last_failover_at")
        batch.drop_column("failover_suspended_at")
        batch.drop_column("auto_failover")

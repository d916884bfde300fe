"""Failover drills: a drill schedule and a drill run say what they rehearse (`kind`: `switchover`, what every
existing one is, or `failover`), and a run keeps a failover drill's RPO (`rpo_lost`: acknowledged canary writes the
new master lacked once writable) beside its RTO.

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("drill_schedules") as batch:
        batch.add_column(sa.Column("kind", sa.String(length=16), nullable=False, server_default="switchover"))
    with op.batch_alter_table("drill_runs") as batch:
        batch.add_column(sa.Column("kind", sa.String(length=16), nullable=False, server_default="switchover"))
        batch.add_column(sa.Column("rpo_lost", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("drill_runs") as batch:
        batch.drop_column("rpo_lost")
        batch.drop_column("kind")
    with op.batch_alter_table("drill_schedules") as batch:
        batch.drop_column("kind")

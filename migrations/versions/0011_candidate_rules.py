"""Candidate rules: per server, whether operations may promote it (`promotion_rule`: prefer, neutral, prefer_not,
must_not); per cluster, the labels a promoted server must share with the one it replaces (`candidate_labels`).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 06:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RULES = ("prefer", "neutral", "prefer_not", "must_not")


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("promotion_rule", sa.String(32), nullable=False, server_default="neutral"))
    with op.batch_alter_table("servers") as batch:
        batch.create_check_constraint("promotionrule", sa.column("promotion_rule").in_(RULES))
    with op.batch_alter_table("clusters") as batch:
        batch.add_column(sa.Column("candidate_labels", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("candidate_labels")
    with op.batch_alter_table("servers") as batch:
        batch.drop_constraint("promotionrule", type_="check")
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("promotion_rule")

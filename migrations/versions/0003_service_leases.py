"""Service leases: which API instance runs the collector (one at a time with several instances on one database).
The collector's row is created here, so taking the lease is a single conditional UPDATE on both databases.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    leases = op.create_table(
        "service_leases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_service_leases")),
    )
    op.bulk_insert(leases, [{"name": "collector", "holder": None, "expires_at": None}])


def downgrade() -> None:
    op.drop_table("service_leases")

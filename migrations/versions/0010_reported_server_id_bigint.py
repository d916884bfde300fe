"""A server's reported server_id as a BIGINT: MariaDB's server_id is an unsigned 32-bit number (up to 4294967295),
past what an INTEGER column holds on PostgreSQL.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 06:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.alter_column("reported_server_id", type_=sa.BigInteger(), existing_type=sa.Integer())


def downgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.alter_column("reported_server_id", type_=sa.Integer(), existing_type=sa.BigInteger())

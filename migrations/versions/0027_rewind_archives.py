"""Rewind archives: the transactions a rejoin's rewind cut from an old master, as the binlog file the server wrote of
them before cutting, kept by the control plane with the cut GTIDs per domain, their size and the operation that cut
them (`rewind_archives`; the bytes are application data, read by operators and admins only).

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29 02:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rewind_archives",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster_id", sa.Integer(), nullable=False),
        sa.Column("server_id", sa.Integer(), nullable=True),
        sa.Column("server_label", sa.String(300), nullable=False),
        sa.Column("operation_id", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("cut", sa.JSON(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"], ["clusters.id"], name=op.f("fk_rewind_archives_cluster_id_clusters"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["server_id"], ["servers.id"], name=op.f("fk_rewind_archives_server_id_servers"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"],
            ["operations.id"],
            name=op.f("fk_rewind_archives_operation_id_operations"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rewind_archives")),
    )
    op.create_index(op.f("ix_rewind_archives_cluster_id"), "rewind_archives", ["cluster_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_rewind_archives_cluster_id"), "rewind_archives")
    op.drop_table("rewind_archives")

"""The replica guard: a cluster setting `enforce_read_only_replicas` (on: a replica seen writable is made read-only
again; off: it is only flagged), and a table beside the servers' with the domains an admin made a replica writable
for and the errant transactions last found on each server, per domain, with when each was first seen.

Existing clusters get the guard on, as new ones do: a replica that takes a client's write splits the cluster's
history, and nothing an operator set before this allowed it.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.add_column(
            sa.Column("enforce_read_only_replicas", sa.Boolean(), nullable=False, server_default=sa.true())
        )
    op.create_table(
        "replica_guard",
        sa.Column("server_id", sa.Integer(), nullable=False),
        sa.Column("cluster_id", sa.Integer(), nullable=False),
        sa.Column("writable_domains", sa.JSON(), nullable=False, server_default="[]"),
        sa.Column("writable_set_by", sa.String(100), nullable=True),
        sa.Column("writable_set_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("errant", sa.JSON(), nullable=False, server_default="[]"),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["server_id"], ["servers.id"], name=op.f("fk_replica_guard_server_id_servers"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["cluster_id"], ["clusters.id"], name=op.f("fk_replica_guard_cluster_id_clusters"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("server_id", name=op.f("pk_replica_guard")),
    )
    op.create_index(op.f("ix_replica_guard_cluster_id"), "replica_guard", ["cluster_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_replica_guard_cluster_id"), "replica_guard")
    op.drop_table("replica_guard")
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("enforce_read_only_replicas")

"""Lag samples outlive their link: each names its link's cluster, replica, master and connection itself, and
`link_id` is no longer a foreign key (it stays the series' key once the link is gone), so a replica promoted since
keeps its lag history for the whole range. A sample goes with its cluster or its replica server.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 15:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LINK_FK = "fk_lag_samples_link_id_replication_links"
COPIED = {"cluster_id": "cluster_id", "replica_server_id": "replica_server_id",
          "master_server_id": "master_server_id", "connection": "name"}  # fmt: skip


def upgrade() -> None:
    with op.batch_alter_table("lag_samples") as batch:
        batch.add_column(sa.Column("cluster_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("replica_server_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("master_server_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("connection", sa.String(length=64), nullable=True))
    for column, source in COPIED.items():
        op.execute(
            f"UPDATE lag_samples SET {column} = "
            f"(SELECT {source} FROM replication_links WHERE replication_links.id = lag_samples.link_id)"
        )
    op.execute("DELETE FROM lag_samples WHERE cluster_id IS NULL OR replica_server_id IS NULL")
    with op.batch_alter_table("lag_samples") as batch:
        batch.drop_constraint(LINK_FK, type_="foreignkey")
        batch.alter_column("cluster_id", existing_type=sa.Integer(), nullable=False)
        batch.alter_column("replica_server_id", existing_type=sa.Integer(), nullable=False)
        batch.create_foreign_key(
            op.f("fk_lag_samples_cluster_id_clusters"), "clusters", ["cluster_id"], ["id"], ondelete="CASCADE"
        )
        batch.create_foreign_key(
            op.f("fk_lag_samples_replica_server_id_servers"), "servers", ["replica_server_id"], ["id"],
            ondelete="CASCADE",
        )  # fmt: skip
        batch.create_index(op.f("ix_lag_samples_cluster_id_sampled_at"), ["cluster_id", "sampled_at"])


def downgrade() -> None:
    op.execute("DELETE FROM lag_samples WHERE link_id NOT IN (SELECT id FROM replication_links)")
    with op.batch_alter_table("lag_samples") as batch:
        batch.drop_index(op.f("ix_lag_samples_cluster_id_sampled_at"))
        batch.drop_constraint(op.f("fk_lag_samples_replica_server_id_servers"), type_="foreignkey")
        batch.drop_constraint(op.f("fk_lag_samples_cluster_id_clusters"), type_="foreignkey")
        batch.create_foreign_key(LINK_FK, "replication_links", ["link_id"], ["id"], ondelete="CASCADE")
        batch.drop_column("connection")
        batch.drop_column("master_server_id")
        batch.drop_column("replica_server_id")
        batch.drop_column("cluster_id")

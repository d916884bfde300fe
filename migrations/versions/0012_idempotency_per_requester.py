"""Idempotency keys per requester: one token's key never returns another token's operation (nor refuses it as a
reuse), so the unique key is (cluster, requester, key).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 07:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("operations") as batch:
        batch.drop_constraint("uq_operations_cluster_id_idempotency_key", type_="unique")
        batch.create_unique_constraint(
            "uq_operations_cluster_id_requester_idempotency_key", ["cluster_id", "requester", "idempotency_key"]
        )


def downgrade() -> None:
    with op.batch_alter_table("operations") as batch:
        batch.drop_constraint("uq_operations_cluster_id_requester_idempotency_key", type_="unique")
        batch.create_unique_constraint("uq_operations_cluster_id_idempotency_key", ["cluster_id", "idempotency_key"])

"""Audit rows typed: the server a call concerned (`server_id`: the path's, or the one it registered) and the
operation it started (`operation_id`), so the audit log is filtered by server and links each operation (a dry run
told apart from a run). Existing rows get the server of their path.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 14:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The largest id a path can name (schemas/common.py ID_MAX).
ID_MAX = 2**31 - 1


def upgrade() -> None:
    with op.batch_alter_table("audit_log") as batch:
        batch.add_column(sa.Column("server_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("operation_id", sa.Integer(), nullable=True))
        batch.create_index(op.f("ix_audit_log_server_id_at"), ["server_id", "at"])
    audit = sa.table(
        "audit_log",
        sa.column("id", sa.BigInteger()),
        sa.column("details", sa.JSON()),
        sa.column("server_id", sa.Integer()),
    )
    bind = op.get_bind()
    for row_id, details in bind.execute(sa.select(audit.c.id, audit.c.details)):
        server = ((details or {}).get("path_params") or {}).get("server_id")
        if isinstance(server, str) and server.isdigit() and 0 < int(server) <= ID_MAX:
            bind.execute(sa.update(audit).where(audit.c.id == row_id).values(server_id=int(server)))


def downgrade() -> None:
    with op.batch_alter_table("audit_log") as batch:
        batch.drop_index(op.f("ix_audit_log_server_id_at"))
        batch.drop_column("operation_id")
        batch.drop_column("server_id")

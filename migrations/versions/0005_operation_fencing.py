"""Operations that always end well: a fencing token on the per-cluster operation lock (bumped each time it is
taken) and the `interrupted` operation state (an operation whose API instance died, reconciled later).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 03:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BEFORE = ("pending", "running", "succeeded", "failed", "undone")
AFTER = (*BEFORE, "interrupted")


def _state(states: tuple[str, ...]) -> sa.Enum:
    return sa.Enum(*states, name="operationstate", native_enum=False, create_constraint=True, length=16)


def upgrade() -> None:
    with op.batch_alter_table("operation_locks") as batch:
        batch.add_column(sa.Column("fencing_token", sa.Integer(), nullable=False, server_default="0"))
    _change_states(BEFORE, AFTER)


def downgrade() -> None:
    op.execute("UPDATE operations SET state = 'failed' WHERE state = 'interrupted'")
    _change_states(AFTER, BEFORE)
    with op.batch_alter_table("operation_locks") as batch:
        batch.drop_column("fencing_token")


def _change_states(before: tuple[str, ...], after: tuple[str, ...]) -> None:
    """The state column's CHECK constraint lists the states: replaced (SQLite: the table is rebuilt with it)."""
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("operations") as batch:
            batch.alter_column("state", existing_type=_state(before), type_=_state(after), existing_nullable=False)
        return
    name = op.f("ck_operations_operationstate")
    op.drop_constraint(name, "operations", type_="check")
    listed = ", ".join(f"'{s}'" for s in after)
    op.create_check_constraint(name, "operations", f"state IN ({listed})")

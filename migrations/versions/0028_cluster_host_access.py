"""Per cluster, how the control plane reaches its servers' hosts for a rebuild (an SSH login: user, port, the
private key encrypted as the cluster's credentials are, the hosts' known_hosts lines, the commands that stop and
start a server, and the donor lag that pauses a copy); and per operation, a cancellation asked for (the process
running it stops it at its next lease renewal when another process took the request).

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-29 04:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.add_column(sa.Column("host_access", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("host_access_key_ciphertext", sa.Text(), nullable=True))
    with op.batch_alter_table("operations") as batch:
        batch.add_column(sa.Column("cancel_requested_by", sa.String(100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("operations") as batch:
        batch.drop_column("cancel_requested_by")
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("host_access_key_ciphertext")
        batch.drop_column("host_access")

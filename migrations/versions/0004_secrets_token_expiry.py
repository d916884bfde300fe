"""Secrets at rest and token expiry: a cluster's path-valued `node_token_file` is gone (the API host's files are no
business of the API); its secrets are stored instead as one encrypted column, `credentials_ciphertext`. API tokens
get an optional `expires_at`.

A `node_token_file` set before this revision is dropped, not read: re-enter the token through the API
(`PATCH /clusters/{id}` with `node_token`) or rely on the fleet's FERRY_NODE_TOKEN(_FILE) setting.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 02:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("node_token_file")
        batch.add_column(sa.Column("credentials_ciphertext", sa.Text(), nullable=True))
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("expires_at")
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("credentials_ciphertext")
        batch.add_column(sa.Column("node_token_file", sa.String(length=1000), nullable=True))

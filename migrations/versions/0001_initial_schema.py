"""Initial schema: clusters, servers, replication links, position and lag samples, health events,
operations and their per-cluster lock, drill schedules and runs, audit log, API tokens.

Revision ID: 0001
Revises:
Create Date: 2026-11-21 14:04:42.948039
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column(
            "role",
            sa.Enum("viewer", "operator", "admin", name="role", native_enum=False, create_constraint=True, length=16),
            nullable=False,
        ),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("display_prefix", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("name", name=op.f("uq_api_tokens_name")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=100), nullable=True),
        sa.Column("token_id", sa.Integer(), nullable=True),
        sa.Column("action", sa.String(length=100), nullable=False),
        sa.Column("method", sa.String(length=10), nullable=False),
        sa.Column("path", sa.String(length=500), nullable=False),
        sa.Column("cluster_id", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    op.create_index(op.f("ix_audit_log_at"), "audit_log", ["at"])
    op.create_index(op.f("ix_audit_log_cluster_id_at"), "audit_log", ["cluster_id", "at"])

    op.create_table(
        "clusters",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("admin_port_offset", sa.Integer(), nullable=True),
        sa.Column("node_token_file", sa.String(length=1000), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_clusters")),
        sa.UniqueConstraint("name", name=op.f("uq_clusters_name")),
    )
    op.create_table(
        "operations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster_id", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column(
            "state",
            sa.Enum(
                "pending",
                "running",
                "succeeded",
                "failed",
                "undone",
                name="operationstate",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("requester", sa.String(length=100), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["cluster_id"], ["clusters.id"], name=op.f("fk_operations_cluster_id_clusters"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operations")),
        sa.UniqueConstraint("cluster_id", "idempotency_key", name=op.f("uq_operations_cluster_id_idempotency_key")),
    )
    op.create_index(op.f("ix_operations_cluster_id_created_at"), "operations", ["cluster_id", "created_at"])

    op.create_table(
        "servers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column(
            "kind",
            sa.Enum("ferry", "mariadb", name="serverkind", native_enum=False, create_constraint=True, length=32),
            nullable=False,
        ),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("protocol_port", sa.Integer(), nullable=True),
        sa.Column("admin_port", sa.Integer(), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("maintenance", sa.Boolean(), nullable=False),
        sa.Column(
            "origin",
            sa.Enum(
                "registered", "discovered", name="serverorigin", native_enum=False, create_constraint=True, length=32
            ),
            nullable=False,
        ),
        sa.Column(
            "health",
            sa.Enum(
                "unknown",
                "healthy",
                "failing",
                "unreachable",
                name="healthstate",
                native_enum=False,
                create_constraint=True,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("reported_server_id", sa.Integer(), nullable=True),
        sa.Column("read_only", sa.Boolean(), nullable=True),
        sa.Column("gtid_binlog_pos", sa.Text(), nullable=True),
        sa.Column("gtid_slave_pos", sa.Text(), nullable=True),
        sa.Column("gtid_current_pos", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"], ["clusters.id"], name=op.f("fk_servers_cluster_id_clusters"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_servers")),
        sa.UniqueConstraint(
            "cluster_id", "host", "protocol_port", name=op.f("uq_servers_cluster_id_host_protocol_port")
        ),
        sa.UniqueConstraint("cluster_id", "name", name=op.f("uq_servers_cluster_id_name")),
    )
    op.create_index(op.f("ix_servers_cluster_id"), "servers", ["cluster_id"])
    op.create_index(op.f("ix_servers_reported_server_id"), "servers", ["reported_server_id"])

    op.create_table(
        "drill_schedules",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("cron", sa.String(length=100), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("candidate_strategy", sa.String(length=16), nullable=False),
        sa.Column("candidate_server_id", sa.Integer(), nullable=True),
        sa.Column("switch_back", sa.Boolean(), nullable=False),
        sa.Column("webhook_url", sa.String(length=1000), nullable=True),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["candidate_server_id"],
            ["servers.id"],
            name=op.f("fk_drill_schedules_candidate_server_id_servers"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["cluster_id"], ["clusters.id"], name=op.f("fk_drill_schedules_cluster_id_clusters"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_drill_schedules")),
        sa.UniqueConstraint("cluster_id", "name", name=op.f("uq_drill_schedules_cluster_id_name")),
    )
    op.create_table(
        "health_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("server_id", sa.Integer(), nullable=False),
        sa.Column(
            "state",
            sa.Enum(
                "unknown",
                "healthy",
                "failing",
                "unreachable",
                name="healthstate",
                native_enum=False,
                create_constraint=True,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["server_id"], ["servers.id"], name=op.f("fk_health_events_server_id_servers"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_health_events")),
    )
    op.create_index(op.f("ix_health_events_server_id_at"), "health_events", ["server_id", "at"])

    op.create_table(
        "operation_locks",
        sa.Column("cluster_id", sa.Integer(), nullable=False),
        sa.Column("operation_id", sa.Integer(), nullable=True),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["cluster_id"], ["clusters.id"], name=op.f("fk_operation_locks_cluster_id_clusters"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"],
            ["operations.id"],
            name=op.f("fk_operation_locks_operation_id_operations"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("cluster_id", name=op.f("pk_operation_locks")),
    )
    op.create_table(
        "position_samples",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("server_id", sa.Integer(), nullable=False),
        sa.Column("domain_id", sa.BigInteger(), nullable=False),
        sa.Column("gtid", sa.Text(), nullable=False),
        sa.Column("seq_no", sa.BigInteger(), nullable=False),
        sa.Column("sampled_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["server_id"], ["servers.id"], name=op.f("fk_position_samples_server_id_servers"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_position_samples")),
    )
    op.create_index(op.f("ix_position_samples_sampled_at"), "position_samples", ["sampled_at"])
    op.create_index(
        op.f("ix_position_samples_server_id_domain_id_sampled_at"),
        "position_samples",
        ["server_id", "domain_id", "sampled_at"],
    )

    op.create_table(
        "replication_links",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster_id", sa.Integer(), nullable=False),
        sa.Column("replica_server_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=True),
        sa.Column(
            "source",
            sa.Enum("replica", "master", name="linksource", native_enum=False, create_constraint=True, length=16),
            nullable=False,
        ),
        sa.Column("master_address", sa.String(length=300), nullable=True),
        sa.Column("master_server_id", sa.Integer(), nullable=True),
        sa.Column("running", sa.Boolean(), nullable=False),
        sa.Column("io_state", sa.String(length=32), nullable=True),
        sa.Column("sql_state", sa.String(length=32), nullable=True),
        sa.Column("received_position", sa.Text(), nullable=True),
        sa.Column("applied_position", sa.Text(), nullable=True),
        sa.Column("lag", sa.JSON(), nullable=False),
        sa.Column("last_error_side", sa.String(length=8), nullable=True),
        sa.Column("last_error_code", sa.String(length=64), nullable=True),
        sa.Column("last_error_message", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"], ["clusters.id"], name=op.f("fk_replication_links_cluster_id_clusters"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["master_server_id"],
            ["servers.id"],
            name=op.f("fk_replication_links_master_server_id_servers"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["replica_server_id"],
            ["servers.id"],
            name=op.f("fk_replication_links_replica_server_id_servers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_replication_links")),
        sa.UniqueConstraint("replica_server_id", "name", name=op.f("uq_replication_links_replica_server_id_name")),
    )
    op.create_index(op.f("ix_replication_links_cluster_id"), "replication_links", ["cluster_id"])

    op.create_table(
        "drill_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster_id", sa.Integer(), nullable=False),
        sa.Column("schedule_id", sa.Integer(), nullable=True),
        sa.Column("operation_id", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("reasons", sa.JSON(), nullable=False),
        sa.Column("rto_s", sa.Double(), nullable=True),
        sa.Column("catch_up_s", sa.Double(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["cluster_id"], ["clusters.id"], name=op.f("fk_drill_runs_cluster_id_clusters"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_drill_runs_operation_id_operations"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["drill_schedules.id"],
            name=op.f("fk_drill_runs_schedule_id_drill_schedules"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_drill_runs")),
    )
    op.create_index(op.f("ix_drill_runs_cluster_id_started_at"), "drill_runs", ["cluster_id", "started_at"])

    op.create_table(
        "lag_samples",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("link_id", sa.Integer(), nullable=False),
        sa.Column("domain_id", sa.BigInteger(), nullable=False),
        sa.Column("transactions", sa.BigInteger(), nullable=False),
        sa.Column("seconds", sa.Double(), nullable=False),
        sa.Column("sampled_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["link_id"],
            ["replication_links.id"],
            name=op.f("fk_lag_samples_link_id_replication_links"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lag_samples")),
    )
    op.create_index(
        op.f("ix_lag_samples_link_id_domain_id_sampled_at"), "lag_samples", ["link_id", "domain_id", "sampled_at"]
    )
    op.create_index(op.f("ix_lag_samples_sampled_at"), "lag_samples", ["sampled_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_lag_samples_sampled_at"), table_name="lag_samples")
    op.drop_index(op.f("ix_lag_samples_link_id_domain_id_sampled_at"), table_name="lag_samples")

    op.drop_table("lag_samples")
    op.drop_index(op.f("ix_drill_runs_cluster_id_started_at"), table_name="drill_runs")

    op.drop_table("drill_runs")
    op.drop_index(op.f("ix_replication_links_cluster_id"), table_name="replication_links")

    op.drop_table("replication_links")
    op.drop_index(op.f("ix_position_samples_server_id_domain_id_sampled_at"), table_name="position_samples")
    op.drop_index(op.f("ix_position_samples_sampled_at"), table_name="position_samples")

    op.drop_table("position_samples")
    op.drop_table("operation_locks")
    op.drop_index(op.f("ix_health_events_server_id_at"), table_name="health_events")

    op.drop_table("health_events")
    op.drop_table("drill_schedules")
    op.drop_index(op.f("ix_servers_reported_server_id"), table_name="servers")
    op.drop_index(op.f("ix_servers_cluster_id"), table_name="servers")

    op.drop_table("servers")
    op.drop_index(op.f("ix_operations_cluster_id_created_at"), table_name="operations")

    op.drop_table("operations")
    op.drop_table("clusters")
    op.drop_index(op.f("ix_audit_log_cluster_id_at"), table_name="audit_log")
    op.drop_index(op.f("ix_audit_log_at"), table_name="audit_log")

    op.drop_table("audit_log")
    op.drop_table("api_tokens")

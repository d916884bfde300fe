//! The `ferryd` command line and how it maps onto the node's configuration.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use ferry_core::commit::{CommitMode, Durability};
use ferry_core::limits::Limits;
use ferry_core::node::NodeConfig;

#[derive(Debug, Parser)]
#[command(name = "ferryd", version, about = "Ferry node: GTIDs, group-committed binlog, row store")]
pub struct Args {
    /// This node's unique server_id, stamped on every GTID it allocates.
    #[arg(long)]
    pub server_id: u32,
    /// Domain of transactions that do not choose one.
    #[arg(long, default_value_t = 0)]
    pub domain_id: u32,
    /// Where the binlog and the store live.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// Address of the binary protocol (clients and replicas).
    #[arg(long, default_value = "127.0.0.1:7301")]
    pub listen: String,
    /// Address of the admin HTTP API.
    #[arg(long, default_value = "127.0.0.1:7401")]
    pub admin: String,
    /// When a commit is acknowledged: local (after the group's fsync), network (after K replicas confirm
    /// receipt), local+network (both), or none (no fsync).
    #[arg(long, default_value = "local")]
    pub durability: Durability,
    /// group, per-txn-fsync (no group commit) or naive-scheduling (for comparison).
    #[arg(long, default_value = "group")]
    pub commit_mode: CommitMode,
    /// Semi-sync (durability network / local+network): replicas that must confirm each commit group.
    #[arg(long, default_value_t = 1)]
    pub semi_sync_replicas: usize,
    /// Semi-sync: how long a group waits for confirmations before the master falls back to asynchronous.
    #[arg(long, default_value_t = 1000)]
    pub semi_sync_timeout_ms: u64,
    /// Semi-sync: where a group waits (MariaDB's rpl_semi_sync_master_wait_point): after_commit (visible on the
    /// master, the client's acknowledgement waits) or after_sync (after the binlog fsync, before the group is
    /// visible: lossless).
    #[arg(long, default_value = "after_commit")]
    pub semi_sync_wait_point: ferry_core::semisync::WaitPoint,
    /// File holding the bearer token for mutating admin calls and privileged connections.
    #[arg(long)]
    pub admin_token_file: Option<PathBuf>,
    /// File holding the change consumers' token (at least 16 characters, not the admin token): a protocol
    /// connection that presents it may read and subscribe to committed changes, and nothing more.
    #[arg(long)]
    pub consumer_token_file: Option<PathBuf>,
    /// Clone donor: how long a clone's snapshot is held after its recipient disconnects, for a resume to continue
    /// it (seconds).
    #[arg(long, default_value_t = 600)]
    pub clone_retention_s: u64,
    /// Clone donor: snapshots held at once (streaming or waiting for a resume).
    #[arg(long, default_value_t = 4)]
    pub clone_snapshots_max: usize,
    /// Clone recipient: row data per chunk asked of the donor (bytes; the donor keeps it within 1 KiB–1 MiB).
    #[arg(long, default_value_t = 256 << 10)]
    pub clone_chunk_bytes: u32,
    /// Clone recipient: row data written to the staging store between its durable commits (bytes, at least 1;
    /// each commit also records where a resume continues, so a crash loses at most this much of the copy).
    #[arg(long, default_value_t = 32 << 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub clone_durable_bytes: u64,
    /// Change consumers streaming at once; one more is refused (TOO_MANY_CONNECTIONS).
    #[arg(long, default_value_t = 64)]
    pub consumers_max: usize,
    /// A change consumer whose connection takes none of its stream while the master writes this many bytes of
    /// binlog is cut off (CONSUMER_CUT_OFF); what the master holds for it meanwhile stays within
    /// --dump-buffer-bytes-max.
    #[arg(long, default_value_t = 64 << 20)]
    pub consumer_stall_bytes_max: u64,
    /// Group commit: wait for this many members before the binlog write (with --commit-wait-us).
    #[arg(long, default_value_t = 1)]
    pub commit_wait_count: usize,
    /// Group commit: longest wait for --commit-wait-count members, in microseconds.
    #[arg(long, default_value_t = 0)]
    pub commit_wait_us: u64,
    /// Rotate the binlog file when it reaches this size.
    #[arg(long, default_value_t = 64 << 20)]
    pub binlog_file_bytes_max: u64,
    /// Period of store checkpoints, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub checkpoint_interval_ms: u64,
    /// Row images in the binlog: full (before and after) or minimal (after only).
    #[arg(long, default_value = "full", value_parser = ["full", "minimal"])]
    pub binlog_row_image: String,
    /// Refuse explicit GTIDs whose seq_no is not above the domain's newest.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub strict_mode: bool,
    /// Host to advertise instead of the bound one (in status, and to masters for topology discovery).
    #[arg(long)]
    pub advertise_host: Option<String>,
    /// Start read-only on a first start (no read-only flag recorded in the data directory yet). Once the flag is
    /// recorded (by the first start and by every change through the admin API) it decides, whatever this says; a
    /// first start with a replication connection configured is read-only without it.
    #[arg(long)]
    pub read_only: bool,
    #[arg(long, default_value_t = Limits::default().connections_max)]
    pub max_connections: usize,
    #[arg(long, default_value_t = Limits::default().frame_bytes_max)]
    pub max_frame_bytes: usize,
    #[arg(long, default_value_t = Limits::default().txn_bytes_max)]
    pub max_txn_bytes: usize,
    #[arg(long, default_value_t = Limits::default().txn_ops_max)]
    pub max_txn_ops: usize,
    /// Largest row event a client transaction may produce, in bytes (at most the binlog format's 64 MiB);
    /// a larger transaction is refused with EVENT_TOO_LARGE before it joins the commit queue.
    #[arg(long, default_value_t = Limits::default().event_bytes_max)]
    pub event_bytes_max: usize,
    /// Bytes of binlog the master holds in memory for one replica's or change consumer's stream: reading ahead
    /// stops when the bytes read and not yet sent reach it, and resumes as the stream drains (never split: a
    /// transaction larger than it is sent alone).
    #[arg(long, default_value_t = Limits::default().dump_buffer_bytes_max)]
    pub dump_buffer_bytes_max: u64,
    /// Bytes of relay log a replication connection's SQL side reads ahead of what it has applied.
    #[arg(long, default_value_t = Limits::default().read_ahead_bytes_max)]
    pub read_ahead_bytes_max: u64,
    /// Space the relay log files of one replication connection may take (MariaDB's relay_log_space_limit): at it
    /// the IO side stops receiving (the connection's `waiting_for_relay_space`) until the SQL side has applied
    /// and purged relay files.
    #[arg(long, default_value_t = Limits::default().relay_log_space_bytes_max)]
    pub relay_log_space_bytes_max: u64,
    /// Binlog expiry by age (MariaDB's binlog_expire_logs_seconds): a closed binlog file whose last write is at
    /// least this old is deleted, unless recovery or a connected replica still needs it. 0: never.
    #[arg(long, default_value_t = 0)]
    pub binlog_expire_logs_seconds: u64,
    /// Binlog expiry by size (MariaDB's max_binlog_total_size): while the binlog files take more than this, the
    /// oldest closed ones are deleted, unless recovery or a connected replica still needs them. 0: no limit.
    #[arg(long, default_value_t = 0)]
    pub binlog_total_bytes_max: u64,
    /// Admin API connections open at once; one more is answered 503 and closed at once, never queued.
    #[arg(long, default_value_t = 256)]
    pub admin_connections_max: usize,
    /// An admin connection must send a whole request head within this many seconds of opening or of its
    /// previous answer; otherwise it is closed (idle keep-alive connections, clients that send slowly).
    #[arg(long, default_value_t = 75)]
    pub admin_idle_timeout_s: u64,
    /// A protocol connection that begins no request frame within this many seconds of opening or of its
    /// previous answer is closed, after an error frame saying why. Only waits for a client's next request
    /// count: a request being served (a long wait-for-position) and a replica's binlog stream are never cut.
    /// 0: never.
    #[arg(long, default_value_t = 300)]
    pub protocol_idle_timeout_s: u64,
    /// Once a request frame has begun, the rest of it must arrive within this many seconds, and the client
    /// must take each answer within as long; otherwise the connection is closed.
    #[arg(long, default_value_t = 30)]
    pub protocol_frame_timeout_s: u64,
}

/// Most `--admin-connections-max` accepts.
const ADMIN_CONNECTIONS_MAX: usize = 65_535;
/// Most `--consumers-max` accepts.
const CONSUMERS_MAX: usize = 65_535;
/// Least `--consumer-stall-bytes-max` accepts: below a few events, any pause of a consumer would cut it off.
const CONSUMER_STALL_BYTES_MIN: u64 = 4096;

impl Args {
    /// The admin API's connection bounds.
    pub fn admin_limits(&self) -> anyhow::Result<crate::admin::ConnectionLimits> {
        if !(1..=ADMIN_CONNECTIONS_MAX).contains(&self.admin_connections_max) {
            anyhow::bail!("--admin-connections-max must be between 1 and {ADMIN_CONNECTIONS_MAX}");
        }
        if self.admin_idle_timeout_s == 0 {
            anyhow::bail!("--admin-idle-timeout-s must be at least 1");
        }
        Ok(crate::admin::ConnectionLimits {
            connections_max: self.admin_connections_max,
            idle_timeout: Duration::from_secs(self.admin_idle_timeout_s),
        })
    }

    /// The protocol port's timeouts.
    pub fn protocol_timeouts(&self) -> anyhow::Result<crate::server::Timeouts> {
        if self.protocol_frame_timeout_s == 0 {
            anyhow::bail!("--protocol-frame-timeout-s must be at least 1");
        }
        Ok(crate::server::Timeouts {
            idle: (self.protocol_idle_timeout_s > 0).then(|| Duration::from_secs(self.protocol_idle_timeout_s)),
            frame: Duration::from_secs(self.protocol_frame_timeout_s),
        })
    }

    /// The change consumers' bounds.
    pub fn consumer_limits(&self) -> anyhow::Result<crate::subscribe::ConsumerLimits> {
        if !(1..=CONSUMERS_MAX).contains(&self.consumers_max) {
            anyhow::bail!("--consumers-max must be between 1 and {CONSUMERS_MAX}");
        }
        if self.consumer_stall_bytes_max < CONSUMER_STALL_BYTES_MIN {
            anyhow::bail!("--consumer-stall-bytes-max must be at least {CONSUMER_STALL_BYTES_MIN}");
        }
        Ok(crate::subscribe::ConsumerLimits {
            consumers_max: self.consumers_max,
            stall_bytes_max: self.consumer_stall_bytes_max,
        })
    }

    /// The binlog expiry settings.
    pub fn expiry_policy(&self) -> ferry_core::binlog::expiry::ExpiryPolicy {
        ferry_core::binlog::expiry::ExpiryPolicy {
            expire_logs_seconds: self.binlog_expire_logs_seconds,
            total_bytes_max: self.binlog_total_bytes_max,
        }
    }
}

impl Args {
    pub fn node_config(&self) -> anyhow::Result<NodeConfig> {
        if self.server_id == 0 {
            anyhow::bail!("--server-id must be above 0 (0 means 'unset' in GTID tooling)");
        }
        let mut config = NodeConfig::new(self.server_id, &self.data_dir);
        config.default_domain = self.domain_id;
        config.commit.mode = self.commit_mode;
        config.commit.durability = self.durability;
        config.commit.wait_count = self.commit_wait_count.max(1);
        config.commit.wait_us = self.commit_wait_us;
        config.commit.strict_mode = self.strict_mode;
        config.binlog_file_bytes_max = self.binlog_file_bytes_max.max(4096);
        config.checkpoint_interval = Duration::from_millis(self.checkpoint_interval_ms.max(10));
        config.log_before_images = self.binlog_row_image == "full";
        if self.semi_sync_replicas == 0 {
            anyhow::bail!("--semi-sync-replicas must be at least 1");
        }
        config.semi_sync = ferry_core::semisync::SemiSyncConfig {
            replicas_required: self.semi_sync_replicas,
            timeout: Duration::from_millis(self.semi_sync_timeout_ms.max(1)),
            wait_point: self.semi_sync_wait_point,
        };
        config.limits = Limits {
            connections_max: self.max_connections,
            frame_bytes_max: self.max_frame_bytes,
            txn_bytes_max: self.max_txn_bytes,
            txn_ops_max: self.max_txn_ops,
            event_bytes_max: self.event_bytes_max,
            dump_buffer_bytes_max: self.dump_buffer_bytes_max,
            read_ahead_bytes_max: self.read_ahead_bytes_max,
            relay_log_space_bytes_max: self.relay_log_space_bytes_max,
            ..Limits::default()
        };
        config.check().map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(config)
    }
}

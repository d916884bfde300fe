//! A node: opens (and recovers) the binlog and the store, executes client transactions through row locks and
//! group commit, and answers the questions the servers built on it ask (status, rows, positions, events).
//!
//! This module holds the node's types, its status, positions and waits; the rest is one file a concern:
//! - `open`: open and recovery (binlog tail, replay into the store), and the listener the commit
//!   pipeline tells of each group.
//! - `writes`: client transactions — validation, row images under row locks, the commit.
//! - `replica`: the replica state — gtid_slave_pos and gtid_current_pos, the checks and the batch commit
//!   replication's SQL side applies through.
//! - `binlog_admin`: FLUSH LOGS, RESET MASTER, DELETE_DOMAIN_ID, PURGE and expiry, SHOW BINLOG EVENTS.
//! - `checkpointer`: checkpoints, the checkpointer thread, the final checkpoint at stop, the close.
//! - `read_only_flag`: the durable read-only flag, so a read-only replica restarts read-only.
//! - `clone`: a clone's install — the staging store replaces the store, the binlog starts again at the clone's
//!   position — crash-safe by an intent completed at open.
//! - `rewind`: going back to a GTID position — the cut transactions archived, the binlog truncated, the store
//!   put back — crash-safe by an intent completed at open.

mod binlog_admin;
mod checkpointer;
mod clone;
mod open;
pub mod read_only_flag;
mod replica;
mod rewind;
mod writes;

pub use clone::{CloneInstallError, CloneIntent};
pub use replica::current_position_of;
pub use rewind::{RewindError, RewindOutcome};

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde::Serialize;

use crate::admission::{Undrained, WriteGate};
use crate::binlog::delete_domain::DomainInBinlog;
use crate::binlog::writer::{BinlogFileInfo, TailRecovery};
use crate::binlog::{BinlogCoord, BinlogError};
use crate::clock::{self, Clock};
use crate::commit::{CommitConfig, CommitError, CommitMode, Durability, GroupCommit, GroupReport};
use crate::fault::StorageHealth;
use crate::gtid::{DomainId, Gtid, GtidPosition, SeqNo, ServerId};
use crate::gtid_alloc::StrictModeViolation;
use crate::limits::Limits;
use crate::locks::RowLocks;
use crate::row::RowOp;
use crate::semisync::{SemiSync, SemiSyncConfig, SemiSyncStatus, WaitPoint};
use crate::store::{Store, StoreError, TableChecksum};
use crate::vfs::{self, Fs};

/// Recent transactions kept in memory for the events API.
pub const RECENT_EVENTS_MAX: usize = 10_000;

#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub server_id: ServerId,
    pub default_domain: DomainId,
    pub data_dir: PathBuf,
    pub commit: CommitConfig,
    pub binlog_file_bytes_max: u64,
    /// Interval of periodic store checkpoints.
    pub checkpoint_interval: Duration,
    /// Log before images in row events (after images are always logged).
    pub log_before_images: bool,
    pub limits: Limits,
    /// With durability `network` / `local+network`: how many replicas must confirm, and for how long to wait.
    pub semi_sync: SemiSyncConfig,
    /// The file layer the binlog, the high-water mark and the store are on (the real file system but in
    /// power-loss tests).
    pub fs: Arc<dyn Fs>,
    /// The clock semi-sync's timeout and the replica delay run on (the system's but in tests).
    pub clock: Arc<dyn Clock>,
}

impl NodeConfig {
    pub fn new(server_id: ServerId, data_dir: impl Into<PathBuf>) -> Self {
        NodeConfig {
            server_id,
            default_domain: 0,
            data_dir: data_dir.into(),
            commit: CommitConfig {
                mode: CommitMode::Group,
                durability: Durability::Local,
                wait_count: 1,
                wait_us: 0,
                strict_mode: true,
            },
            binlog_file_bytes_max: 64 << 20,
            checkpoint_interval: Duration::from_secs(1),
            log_before_images: true,
            limits: Limits::default(),
            semi_sync: SemiSyncConfig {
                replicas_required: 1,
                timeout: Duration::from_secs(1),
                wait_point: WaitPoint::AfterCommit,
            },
            fs: vfs::real(),
            clock: clock::system(),
        }
    }
}

impl NodeConfig {
    /// Refuses settings the node cannot honour, before anything is opened.
    pub fn check(&self) -> Result<(), NodeError> {
        self.limits.check().map_err(NodeError::Config)?;
        if self.commit.mode == CommitMode::NaiveScheduling && self.commit.durability.waits_for_replicas() {
            // Naive scheduling answers each member from its own store apply, outside the leader's semi-sync
            // wait: its commits would be acknowledged before any replica confirmed them.
            return Err(NodeError::Config(format!(
                "commit mode naive-scheduling cannot be combined with durability {}: it does not wait for replicas' \
                 confirmations (semi-sync); use commit mode group or per-txn-fsync, or durability local or none",
                self.commit.durability.name()
            )));
        }
        Ok(())
    }
}

/// A client transaction: row operations, optionally in a chosen domain, optionally with a privileged GTID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnRequest {
    /// Domain for this transaction (the node's default domain when None).
    pub domain: Option<DomainId>,
    /// Privileged: server_id to stamp instead of the node's own.
    pub server_id: Option<ServerId>,
    /// Privileged: seq_no to use instead of allocating one (checked by strict mode).
    pub seq_no: Option<SeqNo>,
    pub ops: Vec<RowOp>,
}

/// Why a transaction was refused; nothing of it was written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TxnError {
    #[error("the node is read-only: writes are refused")]
    ReadOnly,
    #[error("invalid transaction: {0}")]
    Invalid(String),
    #[error("transaction too large: {0}")]
    TooLarge(String),
    /// The transaction's row event is over the largest-event limit; refused before it joined the commit queue.
    #[error("transaction refused: its row event would be {bytes} bytes, over the {limit}-byte event limit (event_bytes_max); nothing was written")]
    EventTooLarge { bytes: usize, limit: usize },
    #[error("cannot increment field {field:?} of {table}/{key}: it holds text, not an integer")]
    TypeMismatch { table: String, key: String, field: String },
    #[error("increment of field {field:?} of {table}/{key} overflows a 64-bit integer")]
    Overflow { table: String, key: String, field: String },
    #[error(transparent)]
    Strict(#[from] StrictModeViolation),
    /// The domain's seq_no counter is at `u64::MAX`: no further GTID can be allocated there.
    #[error("seq_no exhausted in domain {domain}: its newest GTID is {have}, and no seq_no follows {}", SeqNo::MAX)]
    SeqNoExhausted { domain: DomainId, have: Gtid },
    /// A replicated GTID in this node's own domain below what it wrote itself: two masters write one domain.
    #[error("two masters are writing domain {}: received {} but this node already wrote {} there", .0.domain, .0.offered, .0.have)]
    TwoMasters(StrictModeViolation),
    /// A replicated row's before image differs from the row here.
    #[error("row {table}/{key} differs from the master's before image")]
    RowMismatch { table: String, key: String },
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    #[error("{0}")]
    NodeFailed(String),
    /// Written to this node's binlog, but the node stopped before semi-sync replicas confirmed it.
    #[error(transparent)]
    Unconfirmed(CommitError),
}

impl From<CommitError> for TxnError {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::Strict(v) => TxnError::Strict(v),
            CommitError::SeqNoExhausted { domain, have } => TxnError::SeqNoExhausted { domain, have },
            CommitError::EventTooLarge { bytes, limit } => TxnError::EventTooLarge { bytes, limit },
            CommitError::Failed(why) => storage_failed(&why),
            e @ CommitError::Unconfirmed => TxnError::Unconfirmed(e),
        }
    }
}

impl From<StoreError> for TxnError {
    fn from(e: StoreError) -> Self {
        TxnError::NodeFailed(e.to_string())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error(transparent)]
    Binlog(#[from] BinlogError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Recovery(String),
    #[error(transparent)]
    Commit(#[from] CommitError),
    /// A setting the node cannot honour; it does not start.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// Why PURGE BINARY LOGS did nothing.
#[derive(Debug, thiserror::Error)]
pub enum PurgeError {
    #[error("cannot purge {file}: the connected replica {replica} still reads it")]
    InUse { file: String, replica: String },
    #[error(transparent)]
    Node(#[from] NodeError),
}

/// Why FLUSH BINARY LOGS DELETE_DOMAIN_ID did nothing.
#[derive(Debug, thiserror::Error)]
pub enum DeleteDomainError {
    #[error(transparent)]
    InBinlog(#[from] DomainInBinlog),
    #[error(transparent)]
    Node(#[from] NodeError),
}

/// One committed transaction, as the events API shows it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct EventSummary {
    /// Node-local, increasing number of this entry (a paging cursor).
    pub seq: u64,
    pub gtid: String,
    pub domain: DomainId,
    pub server_id: ServerId,
    pub seq_no: SeqNo,
    pub commit_id: u64,
    pub flags: u8,
    pub commit_ts_us: u64,
    pub file: String,
    pub offset: u64,
    pub tables: Vec<String>,
    pub rows: u32,
}

/// Counters of the commit pipeline.
#[derive(Debug, Default)]
pub struct CommitCounters {
    pub commits: AtomicU64,
    pub groups: AtomicU64,
    pub fsyncs: AtomicU64,
    pub bytes_written: AtomicU64,
    /// Client transactions refused because their row event was over `event_bytes_max`.
    pub refused_event_too_large: AtomicU64,
}

#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CounterSnapshot {
    pub commits: u64,
    pub groups: u64,
    pub fsyncs: u64,
    pub bytes_written: u64,
    pub refused_event_too_large: u64,
}

impl CommitCounters {
    pub fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            commits: self.commits.load(Ordering::Relaxed),
            groups: self.groups.load(Ordering::Relaxed),
            fsyncs: self.fsyncs.load(Ordering::Relaxed),
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
            refused_event_too_large: self.refused_event_too_large.load(Ordering::Relaxed),
        }
    }
}

/// Receives every committed group (metrics).
pub trait CommitObserver: Send + Sync {
    fn group_committed(&self, report: &GroupReport);
}

#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct NodeStatus {
    pub server_id: ServerId,
    pub default_domain: DomainId,
    pub read_only: bool,
    pub gtid_binlog_state: String,
    pub gtid_binlog_pos: String,
    pub gtid_slave_pos: String,
    pub gtid_current_pos: String,
    pub binlog_files: Vec<BinlogFileInfo>,
    pub binlog_coord: BinlogCoord,
    pub durable_through: Option<BinlogCoord>,
    pub commit_mode: CommitMode,
    pub durability: Durability,
    pub counters: CounterSnapshot,
    /// Set by the first failed binlog write or fsync, store flush, relay or replica-state write: the node is then
    /// read-only and acknowledges nothing until it is restarted (fail-stop).
    pub failed: Option<String>,
    /// True with durability `none` / `network`: events are sent to replicas before they are fsynced here, so
    /// after a crash of this node a replica may hold transactions this node's binlog lost (their seq_nos are
    /// never handed out again: see the seq_no high-water mark).
    pub replicas_may_be_ahead: bool,
    /// Client transactions admitted past the read-only check whose commits have not been answered yet.
    pub commits_in_flight: u64,
    /// Present with durability `network` / `local+network`.
    pub semi_sync: Option<SemiSyncStatus>,
    /// Largest row event a client transaction may produce (`--event-bytes-max`); refusals are counted in
    /// `counters.refused_event_too_large`.
    pub event_bytes_max: usize,
    /// The memory and space bounds of replication (`--dump-buffer-bytes-max`, `--read-ahead-bytes-max`,
    /// `--relay-log-space-bytes-max`); what each holds now is in `replicas` and `replication`.
    pub dump_buffer_bytes_max: u64,
    pub read_ahead_bytes_max: u64,
    pub relay_log_space_bytes_max: u64,
}

/// What start-up recovery did, for the log and for tests.
#[derive(Debug, Clone, Default)]
pub struct RecoveryReport {
    pub tail: TailRecovery,
    pub replayed_txns: u64,
    pub replayed_from: Option<BinlogCoord>,
}

/// The node's visible position, with conditions to wait on (blocking and async).
struct PositionWatch {
    position: Mutex<GtidPosition>,
    /// End of the last committed group in the binlog: what replicas may be sent.
    end: Mutex<BinlogCoord>,
    moved: Condvar,
    moved_async: tokio::sync::Notify,
}

impl PositionWatch {
    /// Moves the binlog end forward to `through` (never back: with semi-sync after_sync a group's end is told
    /// when it is written, before its commit report).
    fn advance_end(&self, through: BinlogCoord) {
        let mut end = self.end.lock();
        *end = (*end).max(through);
    }
}

pub struct Node {
    config: NodeConfig,
    /// Present with network durability.
    semi_sync: Option<Arc<SemiSync>>,
    /// gtid_slave_pos: the last GTID per domain applied by replication (crash-safe in the store).
    slave_pos: Arc<Mutex<GtidPosition>>,
    commit: GroupCommit,
    store: Arc<Store>,
    locks: RowLocks,
    /// Read-only, and the client commits in flight past it.
    writes: Arc<WriteGate>,
    counters: Arc<CommitCounters>,
    watch: Arc<PositionWatch>,
    recent: Arc<Mutex<VecDeque<EventSummary>>>,
    recovery: RecoveryReport,
    stopping: AtomicBool,
    /// Storage health, shared by the binlog side and the store: once failed, the node is read-only for good.
    health: Arc<StorageHealth>,
    /// The read-only flag as the data directory holds it; the lock also orders its writes with the in-memory
    /// switch, so the file and the gate never disagree once a change has returned.
    durable_read_only: Mutex<read_only_flag::DurableReadOnly>,
    /// Whether a replication connection is configured (told by the server's replication side), so clients that
    /// follow the master can tell a writable replica from the master.
    replicates: AtomicBool,
}

impl Node {
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }

    /// Turns read-only on or off; returns the client commits in flight at that instant (with `on`: those admitted
    /// before it, which may still land — [`Node::commits_drained`] waits for them).
    pub fn set_read_only(&self, on: bool) -> u64 {
        self.writes.set_read_only(on)
    }

    /// Turns read-only on or off and records it in the data directory, so a restart keeps it whatever the
    /// command line says. With `on`, writes stop at once (before the record is written) and the record is written
    /// before this returns; with `off`, the record is written first, so a failure to write it leaves the node
    /// read-only. Returns the client commits in flight, as [`Node::set_read_only`]. Writing the same value again
    /// does no I/O.
    pub fn set_read_only_durably(&self, on: bool) -> Result<u64, NodeError> {
        use read_only_flag::DurableReadOnly;
        let mut durable = self.durable_read_only.lock();
        let in_flight = if on { Some(self.writes.set_read_only(true)) } else { None };
        if *durable != DurableReadOnly::Set(on) {
            let dir = &self.config.data_dir;
            read_only_flag::write_on(&*self.config.fs, dir, on)
                .map_err(|e| BinlogError::io(dir.join(read_only_flag::READ_ONLY_FILE), e))?;
            *durable = DurableReadOnly::Set(on);
        }
        Ok(in_flight.unwrap_or_else(|| self.writes.set_read_only(false)))
    }

    /// Whether the node replicates: a replication connection is configured, running or not.
    pub fn replicates(&self) -> bool {
        self.replicates.load(Ordering::SeqCst)
    }

    /// The server's replication side says whether a connection is configured.
    pub fn set_replicates(&self, on: bool) {
        self.replicates.store(on, Ordering::SeqCst);
    }

    /// The read-only flag as the data directory holds it (at open, then as [`Node::set_read_only_durably`] wrote it).
    pub fn durable_read_only(&self) -> read_only_flag::DurableReadOnly {
        self.durable_read_only.lock().clone()
    }

    /// Read-only by the operator's choice, or for good after a storage failure.
    pub fn is_read_only(&self) -> bool {
        self.writes.is_read_only() || self.health.is_failed()
    }

    /// Why the storage failed (a write, fsync or flush), once it did: the node then acknowledges nothing more.
    pub fn storage_failure(&self) -> Option<String> {
        self.health.failure()
    }

    /// Records a storage failure found outside the commit path (a relay log write): fail-stop as for the binlog.
    pub fn fail_storage(&self, why: impl Into<String>) -> String {
        self.health.fail(why)
    }

    /// Client transactions admitted past the read-only check and not answered yet.
    pub fn commits_in_flight(&self) -> u64 {
        self.writes.in_flight()
    }

    /// Waits until the node is read-only and every client commit admitted before that has its answer: from then
    /// on [`Node::binlog_position`] only moves by replication. Bounded by `timeout`; ends early when read-only is
    /// turned off.
    pub async fn commits_drained(&self, timeout: Duration) -> Result<(), Undrained> {
        self.writes.drained(timeout).await
    }

    /// The position whose transactions are visible (written here and applied to the store).
    pub fn position(&self) -> GtidPosition {
        self.watch.position.lock().clone()
    }

    /// Semi-sync state, with network durability.
    pub fn semi_sync(&self) -> Option<&Arc<SemiSync>> {
        self.semi_sync.as_ref()
    }

    /// End of the last committed group in the binlog (durable with durability `local`): the bound of what may
    /// be streamed to replicas.
    pub fn binlog_end(&self) -> BinlogCoord {
        *self.watch.end.lock()
    }

    /// How far change consumers may read given the binlog's end `end`: all of it, or with semi-sync only up to
    /// the start of the first group of this node's clients still waiting for its replicas' confirmations — a
    /// consumer is never sent what a failover could lose (unless semi-sync fell back to asynchronous).
    pub fn consumers_end(&self, end: BinlogCoord) -> BinlogCoord {
        match self.semi_sync.as_ref().and_then(|s| s.held_from()) {
            Some(held) => held.min(end),
            None => end,
        }
    }

    /// Changes whenever [`Node::consumers_end`] may have moved without the binlog growing (a group's wait
    /// ended); `None` without semi-sync.
    pub fn consumers_released(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.semi_sync.as_ref().map(|s| s.releases())
    }

    /// gtid_binlog_pos as change consumers may have it now: without the transactions held back from them
    /// ([`Node::consumers_end`]). Reads the binlog file of the first held group.
    pub fn consumers_position(&self) -> Result<GtidPosition, BinlogError> {
        // Groups are held with the binlog lock held: none can start while it is taken here.
        let (position, held) = self.commit.with_log(|log| {
            let held = self.semi_sync.as_ref().and_then(|s| s.held_from());
            (log.binlog.state().position().clone(), held)
        });
        match held {
            None => Ok(position),
            Some(at) => {
                let file = self.binlog_dir().join(crate::binlog::file_name(at.file_seq));
                crate::binlog::seek::position_at(&file, at.offset)
            }
        }
    }

    /// Waits until the binlog end moves past `seen` or `timeout` passes; returns the end either way.
    pub async fn wait_for_binlog_growth(&self, seen: BinlogCoord, timeout: Duration) -> BinlogCoord {
        let mut moved = std::pin::pin!(self.watch.moved_async.notified());
        moved.as_mut().enable();
        let end = self.binlog_end();
        if end > seen {
            return end;
        }
        let _ = tokio::time::timeout(timeout, moved).await;
        self.binlog_end()
    }

    /// gtid_binlog_pos now, read under the binlog lock: it includes every transaction whose commit was answered.
    pub fn binlog_position(&self) -> GtidPosition {
        self.commit.with_log(|log| log.binlog.state().position().clone())
    }

    /// The binlog state now (for start-position search).
    pub fn binlog_state(&self) -> crate::gtid::BinlogState {
        self.commit.with_log(|log| log.binlog.state().clone())
    }

    /// [`Node::wait_for_position`] for async callers.
    pub async fn wait_for_position_async(
        &self,
        target: &GtidPosition,
        timeout: Duration,
    ) -> Result<GtidPosition, GtidPosition> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before looking, so a move between the look and the wait is not missed.
            let mut moved = std::pin::pin!(self.watch.moved_async.notified());
            moved.as_mut().enable();
            let pos = self.waited_position(&self.position());
            if pos.is_ahead_of(target) {
                return Ok(pos);
            }
            if tokio::time::timeout_at(deadline, moved).await.is_err() {
                let pos = self.waited_position(&self.position());
                return if pos.is_ahead_of(target) { Ok(pos) } else { Err(pos) };
            }
        }
    }

    /// Blocks until the node's position is ahead of `target` or `timeout` passes; returns the position either way,
    /// with `Ok` only when it was reached. The position waited on is [`Node::waited_position`]'s.
    pub fn wait_for_position(&self, target: &GtidPosition, timeout: Duration) -> Result<GtidPosition, GtidPosition> {
        let deadline = Instant::now() + timeout;
        let mut visible = self.watch.position.lock();
        loop {
            let pos = self.waited_position(&visible);
            if pos.is_ahead_of(target) {
                return Ok(pos);
            }
            if self.watch.moved.wait_until(&mut visible, deadline).timed_out() {
                let pos = self.waited_position(&visible);
                return if pos.is_ahead_of(target) { Ok(pos) } else { Err(pos) };
            }
        }
    }

    /// What a wait for a position compares with: the visible position joined with gtid_slave_pos, so a replicated
    /// transaction passed over without being applied (skip counter, domain filters) counts as reached — as for
    /// MariaDB's MASTER_GTID_WAIT, which waits on gtid_slave_pos.
    fn waited_position(&self, visible: &GtidPosition) -> GtidPosition {
        visible.join(&self.slave_pos.lock())
    }

    pub fn status(&self) -> NodeStatus {
        let (state, pos, files, coord, durable, failed) = self.commit.with_log(|log| {
            (
                log.binlog.state().to_string(),
                log.binlog.state().position().clone(),
                log.binlog.files(),
                log.binlog.coord(),
                log.durable_through,
                log.failed(),
            )
        });
        NodeStatus {
            server_id: self.config.server_id,
            default_domain: self.config.default_domain,
            read_only: self.is_read_only(),
            gtid_binlog_state: state,
            gtid_binlog_pos: pos.to_string(),
            gtid_slave_pos: self.slave_position().to_string(),
            gtid_current_pos: self.current_position().to_string(),
            binlog_files: files,
            binlog_coord: coord,
            durable_through: durable,
            commit_mode: self.config.commit.mode,
            durability: self.config.commit.durability,
            counters: self.counters.snapshot(),
            failed,
            replicas_may_be_ahead: !self.config.commit.durability.fsyncs(),
            commits_in_flight: self.commits_in_flight(),
            semi_sync: self.semi_sync.as_ref().map(|s| s.status()),
            event_bytes_max: self.config.limits.event_bytes_max,
            dump_buffer_bytes_max: self.config.limits.dump_buffer_bytes_max,
            read_ahead_bytes_max: self.config.limits.read_ahead_bytes_max,
            relay_log_space_bytes_max: self.config.limits.relay_log_space_bytes_max,
        }
    }

    /// Recent transactions, newest first: at most `limit`, optionally one domain, older than cursor `before`.
    pub fn recent_events(&self, domain: Option<DomainId>, limit: usize, before: Option<u64>) -> Vec<EventSummary> {
        let recent = self.recent.lock();
        recent
            .iter()
            .rev()
            .filter(|e| before.is_none_or(|b| e.seq < b))
            .filter(|e| domain.is_none_or(|d| e.domain == d))
            .take(limit)
            .cloned()
            .collect()
    }

    /// Table checksums together with the exact position they correspond to. Off the commit path: the binlog lock
    /// is held only to take a store snapshot (the in-memory changes frozen by a move, a redb read snapshot
    /// opened) with the position; nothing is flushed, no flush in progress is waited for, and the rows are read
    /// and hashed after the lock is let go. Refused once the node's storage has failed.
    pub fn checksums(&self) -> Result<(GtidPosition, BTreeMap<String, TableChecksum>), StoreError> {
        if let Some(why) = self.health.failure() {
            return Err(StoreError::Failed(why));
        }
        let (snapshot, position) = self.commit.with_log(|_| (self.store.snapshot(), self.position()));
        Ok((position, snapshot?.checksums()?))
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A clone's snapshot: a consistent view of the store with the exact position its rows reflect (taken as
    /// [`Node::checksums`] takes its view: the binlog lock held only to freeze and open it).
    pub fn clone_source(&self) -> Result<(GtidPosition, crate::store::CloneSource), StoreError> {
        if let Some(why) = self.health.failure() {
            return Err(StoreError::Failed(why));
        }
        let (snapshot, position) = self.commit.with_log(|_| (self.store.snapshot(), self.position()));
        Ok((position, crate::store::CloneSource::new(snapshot?)))
    }
}

/// The refusal of a client transaction after a storage failure (protocol error `NODE_FAILED`).
fn storage_failed(why: &str) -> TxnError {
    TxnError::NodeFailed(format!(
        "storage failed, the node is read-only and acknowledges nothing until it is restarted: {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binlog::{hwm, reset};
    use crate::row::Value;

    fn pos(text: &str) -> GtidPosition {
        text.parse().unwrap()
    }

    /// MariaDB's documented rule for gtid_current_pos (Global Transaction ID, "gtid_current_pos"): per domain,
    /// if the server_id of the GTID in gtid_binlog_pos is this server's own and its seq_no is higher than the
    /// GTID in gtid_slave_pos, the binlog's GTID is used, otherwise gtid_slave_pos's.
    #[test]
    fn current_pos_takes_own_newer_binlog_gtids_else_the_slave_pos() {
        // Domain 0: written here after replication stopped -> binlog. Domain 1: replicated, this server's own
        // binlog entry is older -> slave_pos. Domain 2: the binlog's newest is another server's -> slave_pos.
        let binlog = pos("0-1-9,1-1-3,2-7-20");
        let slave = pos("0-2-5,1-2-8,2-7-20");
        assert_eq!(current_position_of(1, &binlog, &slave), pos("0-1-9,1-2-8,2-7-20"));
        // An equal seq_no is not newer: slave_pos wins.
        assert_eq!(current_position_of(1, &pos("0-1-5"), &pos("0-2-5")), pos("0-2-5"));
    }

    /// Domains present in only one of the two, as MariaDB merges them: a domain only in gtid_slave_pos is kept;
    /// a domain only in the binlog is kept when this server wrote its newest GTID, and left out when another
    /// server did (MariaDB drops binlog GTIDs of other server_ids before the merge).
    #[test]
    fn current_pos_keeps_own_binlog_only_domains_and_drops_other_servers_ones() {
        let binlog = pos("3-1-4,4-7-11");
        let slave = pos("5-2-6");
        assert_eq!(current_position_of(1, &binlog, &slave), pos("3-1-4,5-2-6"));
        assert_eq!(current_position_of(1, &pos("4-7-11"), &GtidPosition::new()), GtidPosition::new());
    }

    /// The node's status follows the rule: a domain this server never wrote itself and never applied by
    /// replication (a privileged client logged it with another server_id) is not in gtid_current_pos.
    #[test]
    fn a_node_leaves_other_servers_binlog_only_domains_out_of_current_pos() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
        let put = |domain: u32, server_id: Option<u32>| TxnRequest {
            domain: Some(domain),
            server_id,
            ops: vec![RowOp::Increment { table: "t".into(), key: "k".into(), field: "n".into(), by: 1 }],
            ..Default::default()
        };
        node.execute(put(0, None), false).unwrap();
        node.execute(put(6, Some(9)), true).unwrap();
        let status = node.status();
        assert_eq!(status.gtid_binlog_pos, "0-1-1,6-9-1");
        assert_eq!(status.gtid_slave_pos, "");
        assert_eq!(status.gtid_current_pos, "0-1-1");
    }

    fn increment(domain: u32) -> TxnRequest {
        TxnRequest {
            domain: Some(domain),
            ops: vec![RowOp::Increment { table: "t".into(), key: "k".into(), field: "n".into(), by: 1 }],
            ..Default::default()
        }
    }

    #[test]
    fn a_domain_at_the_last_seq_no_refuses_local_transactions_with_its_name_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
        // A replayed (privileged) GTID at u64::MAX is accepted...
        let last = TxnRequest { seq_no: Some(u64::MAX), server_id: Some(2), ..increment(3) };
        node.execute(last, true).unwrap();
        let before = node.status();
        // ...but nothing can follow it in that domain: refused with a typed error, never wrapped, never a panic.
        let err = node.execute(increment(3), false).unwrap_err();
        assert!(matches!(err, TxnError::SeqNoExhausted { domain: 3, .. }), "{err}");
        assert!(err.to_string().contains("domain 3") && err.to_string().contains("exhausted"), "{err}");
        let after = node.status();
        assert_eq!(after.gtid_binlog_pos, before.gtid_binlog_pos, "nothing written");
        assert_eq!(after.binlog_coord, before.binlog_coord);
        assert_eq!(after.failed, None, "the node keeps serving");
        // Other domains go on.
        assert_eq!(node.execute(increment(0), false).unwrap().gtid, Gtid::new(0, 1, 1));
    }

    #[test]
    fn a_transaction_over_event_bytes_max_is_refused_before_the_queue_and_the_node_keeps_serving() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = NodeConfig::new(1, dir.path());
        config.limits.event_bytes_max = 4096;
        let node = Node::open(config, None).unwrap();
        let big = TxnRequest {
            domain: Some(0),
            ops: vec![RowOp::Put {
                table: "t".into(),
                key: "big".into(),
                row: [("v".to_string(), Value::Text("x".repeat(5000)))].into(),
            }],
            ..Default::default()
        };
        let err = node.execute(big, false).unwrap_err();
        let TxnError::EventTooLarge { bytes, limit } = err else { panic!("{err}") };
        assert_eq!(limit, 4096);
        assert!(bytes > 5000, "{bytes}");
        let text = err.to_string();
        assert!(text.contains(&bytes.to_string()) && text.contains("4096"), "{text}");
        let status = node.status();
        assert_eq!(status.counters.refused_event_too_large, 1);
        assert_eq!(status.counters.commits, 0, "nothing was committed");
        assert_eq!(status.gtid_binlog_pos, "", "nothing was written and no seq_no was taken");
        assert_eq!(status.event_bytes_max, 4096);
        assert_eq!(node.execute(increment(0), false).unwrap().gtid, Gtid::new(0, 1, 1));
    }

    /// A RESET MASTER cut short by a crash (its intent written, the old files still there) is completed at the
    /// next open: the old files go, the new first file starts, the data stays as it was (nothing replayed twice).
    #[test]
    fn an_interrupted_reset_master_is_completed_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
        for _ in 0..3 {
            node.execute(increment(0), false).unwrap();
        }
        node.flush_logs().unwrap();
        node.execute(increment(0), false).unwrap();
        node.stop();
        drop(node);
        let binlog_dir = dir.path().join("binlog");
        hwm::raise(&binlog_dir, [Gtid::new(0, 1, 4)]).unwrap();
        reset::write_intent(&crate::vfs::RealFs, &binlog_dir, reset::ResetIntent { first_seq: 3 }).unwrap();
        let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
        let status = node.status();
        let files: Vec<&str> = status.binlog_files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(files, ["ferry-bin.000003"]);
        assert_eq!(status.gtid_binlog_state, "");
        assert_eq!(node.read_row("t", "k").unwrap().unwrap()["n"], Value::Int(4), "the data is kept, once");
        assert_eq!(reset::read_intent(&crate::vfs::RealFs, &binlog_dir).unwrap(), None);
        assert_eq!(node.execute(increment(0), false).unwrap().gtid, Gtid::new(0, 1, 5), "no seq_no handed out twice");
    }

    #[test]
    fn reset_master_keeps_seq_nos_unless_told_to_reuse_them() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
        node.execute(increment(0), false).unwrap();
        node.execute(increment(0), false).unwrap();
        assert_eq!(node.reset_master(1, false).unwrap(), ["ferry-bin.000001"]);
        assert_eq!(node.status().gtid_binlog_pos, "");
        assert_eq!(node.execute(increment(0), false).unwrap().gtid, Gtid::new(0, 1, 3));
        node.reset_master(1, true).unwrap();
        assert_eq!(node.execute(increment(0), false).unwrap().gtid, Gtid::new(0, 1, 1), "MariaDB's numbering");
        assert_eq!(node.read_row("t", "k").unwrap().unwrap()["n"], Value::Int(4));
        node.stop();
        drop(node);
        let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
        assert_eq!(node.status().gtid_binlog_state, "0-1-1");
        assert_eq!(node.read_row("t", "k").unwrap().unwrap()["n"], Value::Int(4), "nothing replayed twice");
        assert_eq!(node.execute(increment(0), false).unwrap().gtid, Gtid::new(0, 1, 2));
    }

    /// Checksums are off the commit path: with a store flush in progress (a checkpoint writing redb, held here
    /// by the test), they are computed without waiting for it, and commits go on meanwhile.
    #[test]
    fn checksums_wait_for_no_flush_and_hold_up_no_commit() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
        node.execute(increment(0), false).unwrap();
        let checkpoint_in_progress = node.store().begin_flush();
        let (done_tx, done) = std::sync::mpsc::channel();
        let worker = {
            let node = node.clone();
            std::thread::spawn(move || {
                let (position, sums) = node.checksums().unwrap();
                let committed = node.execute(increment(0), false).unwrap();
                let _ = done_tx.send((position, sums, committed.gtid));
            })
        };
        let (position, sums, gtid) = done
            .recv_timeout(Duration::from_secs(60))
            .expect("checksums and a commit finish while a flush holds the store's flush turn");
        assert_eq!(position.to_string(), "0-1-1");
        assert_eq!(sums["t"].rows, 1);
        assert_eq!(gtid, Gtid::new(0, 1, 2));
        worker.join().unwrap();
        checkpoint_in_progress.write(true).unwrap();
        assert_eq!(node.checksums().unwrap().0.to_string(), "0-1-2");
    }

    #[test]
    fn event_bytes_max_above_the_format_limit_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = NodeConfig::new(1, dir.path());
        config.limits.event_bytes_max = crate::binlog::event::MAX_EVENT_BYTES + 1;
        let err = Node::open(config, None).err().expect("refused");
        assert!(err.to_string().contains("event_bytes_max"), "{err}");
    }

    #[test]
    fn naive_scheduling_with_semi_sync_is_refused_at_open_naming_both() {
        for durability in [Durability::Network, Durability::LocalAndNetwork] {
            let dir = tempfile::tempdir().unwrap();
            let mut config = NodeConfig::new(1, dir.path());
            config.commit.mode = CommitMode::NaiveScheduling;
            config.commit.durability = durability;
            let err = Node::open(config, None).err().expect("refused");
            let text = err.to_string();
            assert!(text.contains("naive-scheduling") && text.contains(durability.name()), "{text}");
            assert!(!dir.path().join("binlog").exists(), "refused before anything was opened");
        }
        for durability in [Durability::Local, Durability::None] {
            let dir = tempfile::tempdir().unwrap();
            let mut config = NodeConfig::new(1, dir.path());
            config.commit.mode = CommitMode::NaiveScheduling;
            config.commit.durability = durability;
            assert!(Node::open(config, None).is_ok());
        }
    }
}

//! A node: opens (and recovers) the binlog and the store, executes client transactions through row locks and
//! group commit, and answers the questions the servers built on it ask (status, rows, positions, events).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde::Serialize;

use crate::admission::{Admitted, Undrained, WriteGate};
use crate::binlog::delete_domain::{check_deletion, DomainDeletion, DomainInBinlog};
use crate::binlog::event::{flags, rows_event_body_len, GtidEvent};
use crate::binlog::expiry::{self, reader_of, ExpiryPlan, ExpiryPolicy, FileFacts, ReaderNeed};
use crate::binlog::listing::{list_events, EventRow, ListingError, ListingRequest};
use crate::binlog::reader::{read_gtid_list_on, FileReader, Item, TransactionReader};
use crate::binlog::writer::{BinlogFileInfo, BinlogWriter, TailRecovery};
use crate::binlog::{file_name, file_seq, hwm, reset, BinlogCoord, BinlogError, MAGIC};
use crate::clock::{self, Clock};
use crate::commit::{
    AwaitingReplicas, CommitConfig, CommitError, CommitLog, CommitMode, Committed, Durability, GroupCommit,
    GroupReport, GtidOverride, PreparedTxn,
};
use crate::fault::StorageHealth;
use crate::gtid::{BinlogState, DomainId, Gtid, GtidPosition, SeqNo, ServerId};
use crate::gtid_alloc::{GtidAllocator, StrictModeViolation};
use crate::limits::Limits;
use crate::locks::RowLocks;
use crate::row::{row_bytes, Row, RowChange, RowOp, Value};
use crate::semisync::{SemiSync, SemiSyncConfig, SemiSyncStatus, WaitPoint};
use crate::store::{Store, StoreError, TableChecksum};
use crate::vfs::{self, Fs};

/// Recent transactions kept in memory for the events API.
pub const RECENT_EVENTS_MAX: usize = 10_000;
/// Transactions applied between store flushes while replaying the binlog at start-up.
const REPLAY_BATCH_TXNS: usize = 10_000;
/// Rows held in memory before a checkpoint is taken early (bounds memory and replay time).
const UNFLUSHED_ROWS_MAX: usize = 200_000;
/// How often the checkpointer looks at the clock and the in-memory row count.
const CHECKPOINT_POLL: Duration = Duration::from_millis(50);

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
}

impl From<CommitError> for TxnError {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::Strict(v) => TxnError::Strict(v),
            CommitError::SeqNoExhausted { domain, have } => TxnError::SeqNoExhausted { domain, have },
            CommitError::EventTooLarge { bytes, limit } => TxnError::EventTooLarge { bytes, limit },
            CommitError::Failed(why) => storage_failed(&why),
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
}

impl Node {
    /// Opens the node's data directory: recovers the binlog tail, replays the binlog into the store from its
    /// last durable coordinate, and makes the result durable before serving.
    pub fn open(config: NodeConfig, observer: Option<Arc<dyn CommitObserver>>) -> Result<Arc<Node>, NodeError> {
        config.check()?;
        let fs = config.fs.clone();
        fs.create_dir_all(&config.data_dir).map_err(|e| BinlogError::io(&config.data_dir, e))?;
        let binlog_dir = config.data_dir.join("binlog");
        let health = Arc::new(StorageHealth::new());
        let store = Arc::new(Store::open_on(&*fs, &config.data_dir.join("store.redb"), health.clone())?);
        if let Some(intent) = reset::read_intent(&*fs, &binlog_dir)? {
            tracing::warn!(first_file = %file_name(intent.first_seq), "completing a RESET MASTER a crash interrupted");
            let through = BinlogWriter::start_fresh(
                fs.clone(),
                &binlog_dir,
                config.server_id,
                config.binlog_file_bytes_max,
                intent.first_seq,
            )?;
            store.rebase(through)?;
            reset::clear_intent(&*fs, &binlog_dir)?;
        }
        let applied = store.applied_through()?;
        let (binlog, tail) = BinlogWriter::open_keeping_on(
            fs.clone(),
            &binlog_dir,
            config.server_id,
            config.binlog_file_bytes_max,
            applied,
            !config.commit.durability.fsyncs(),
        )?;
        if let Some(applied) = applied {
            if applied > binlog.coord() {
                return Err(NodeError::Recovery(format!(
                    "the store is durable through {applied}, past the end of the binlog at {}: the binlog lost acknowledged data; refusing to start",
                    binlog.coord()
                )));
            }
        }
        let recent = Arc::new(Mutex::new(VecDeque::with_capacity(RECENT_EVENTS_MAX)));
        let replayed = replay(&binlog, &store, applied, &recent)?;
        let marks = hwm::read_on(&*fs, &binlog_dir)?;
        let mut log = CommitLog::new(binlog, store.clone(), applied);
        if !config.commit.durability.fsyncs() {
            log = log.with_reservation(hwm::Reservation::new_on(fs.clone(), &binlog_dir, marks.clone()));
        }
        if replayed > 0 || applied.is_none() {
            log.checkpoint(config.commit.durability)?;
        }
        if replayed > 0 {
            tracing::info!(replayed, from = ?applied.map(|c| c.to_string()), "replayed the binlog into the store");
        }
        let position = log.binlog.state().position().clone();
        let slave_pos = Arc::new(Mutex::new(store.replica_position()?));
        let alloc = Arc::new(GtidAllocator::with_floor(config.server_id, &position, marks.into_iter().collect()));
        // Strict mode compares with the binlog; gtid_slave_pos (which may hold transactions passed over, or a
        // position set by CHANGE MASTER) only raises where seq_nos are handed out, like the high-water mark.
        for gtid in slave_pos.lock().iter() {
            alloc.raise_floor(gtid);
        }
        let counters = Arc::new(CommitCounters::default());
        let watch = Arc::new(PositionWatch {
            end: Mutex::new(log.binlog.coord()),
            position: Mutex::new(position),
            moved: Condvar::new(),
            moved_async: tokio::sync::Notify::new(),
        });
        let on_group = {
            let (counters, watch, recent, slave_pos) =
                (counters.clone(), watch.clone(), recent.clone(), slave_pos.clone());
            Box::new(move |report: &GroupReport| {
                {
                    let mut slave_pos = slave_pos.lock();
                    for t in report.txns.iter().filter(|t| t.flags & flags::REPLICATED != 0) {
                        slave_pos.set(t.committed.gtid);
                    }
                }
                counters.commits.fetch_add(report.txns.len() as u64, Ordering::Relaxed);
                counters.groups.fetch_add(1, Ordering::Relaxed);
                counters.fsyncs.fetch_add(u64::from(report.fsync.is_some()), Ordering::Relaxed);
                counters.bytes_written.fetch_add(report.bytes, Ordering::Relaxed);
                {
                    let mut recent = recent.lock();
                    for t in &report.txns {
                        push_recent(
                            &mut recent,
                            summary(
                                t.committed.gtid,
                                t.committed.commit_id,
                                t.flags,
                                t.committed.commit_ts_us,
                                t.start,
                                t.tables.clone(),
                                t.rows,
                            ),
                        );
                    }
                }
                {
                    let mut pos = watch.position.lock();
                    for t in &report.txns {
                        pos.set(t.committed.gtid);
                    }
                }
                watch.advance_end(report.through);
                watch.moved.notify_all();
                watch.moved_async.notify_waiters();
                if let Some(observer) = &observer {
                    observer.group_committed(report);
                }
            })
        };
        let on_binlogged = {
            let watch = watch.clone();
            Box::new(move |through: BinlogCoord| {
                watch.advance_end(through);
                // Dump streams wake on this; waits for a position look again and find nothing new.
                watch.moved_async.notify_waiters();
            })
        };
        let mut commit =
            GroupCommit::new(config.commit.clone(), alloc, log, on_group).with_binlogged_hook(on_binlogged);
        let semi_sync = config
            .commit
            .durability
            .waits_for_replicas()
            .then(|| Arc::new(SemiSync::with_clock(config.semi_sync, config.clock.clone())));
        if let Some(semi_sync) = &semi_sync {
            commit = commit.with_semi_sync(semi_sync.clone());
        }
        let recovery = RecoveryReport { tail, replayed_txns: replayed, replayed_from: applied };
        Ok(Arc::new(Node {
            config,
            semi_sync,
            slave_pos,
            commit,
            store,
            locks: RowLocks::new(),
            writes: WriteGate::new(false),
            counters,
            watch,
            recent,
            recovery,
            stopping: AtomicBool::new(false),
            health,
        }))
    }

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

    fn check_name(&self, what: &str, name: &str) -> Result<(), TxnError> {
        let max = self.config.limits.name_bytes_max;
        if name.is_empty() || name.len() > max {
            return Err(TxnError::Invalid(format!("{what} {name:?} must be 1 to {max} bytes long")));
        }
        if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
            return Err(TxnError::Invalid(format!("{what} {name:?} contains {c:?}: use letters, digits and '_'")));
        }
        Ok(())
    }

    fn validate(&self, req: &TxnRequest, privileged: bool) -> Result<(), TxnError> {
        let limits = &self.config.limits;
        if req.ops.is_empty() {
            return Err(TxnError::Invalid("a transaction needs at least one operation".into()));
        }
        if req.ops.len() > limits.txn_ops_max {
            return Err(TxnError::TooLarge(format!(
                "{} operations, the limit is {}",
                req.ops.len(),
                limits.txn_ops_max
            )));
        }
        if (req.server_id.is_some() || req.seq_no.is_some()) && !privileged {
            return Err(TxnError::PermissionDenied(
                "setting server_id or seq_no needs a privileged (authenticated) connection".into(),
            ));
        }
        for op in &req.ops {
            self.check_name("table name", op.table())?;
            if op.key().len() > limits.key_bytes_max {
                return Err(TxnError::Invalid(format!(
                    "key of {} bytes exceeds the {}-byte limit",
                    op.key().len(),
                    limits.key_bytes_max
                )));
            }
            match op {
                RowOp::Put { row, .. } => row.keys().try_for_each(|f| self.check_name("field name", f))?,
                RowOp::Increment { field, .. } => self.check_name("field name", field)?,
                RowOp::Delete { .. } => {}
            }
        }
        Ok(())
    }

    /// Turns operations into row images against the current rows (locks held by the caller).
    fn images(&self, ops: Vec<RowOp>) -> Result<Vec<RowChange>, TxnError> {
        let keys: Vec<(&str, &str)> = ops.iter().map(|op| (op.table(), op.key())).collect();
        let current = self.store.read_rows(&keys)?;
        let mut overlay: HashMap<(String, String), Option<Row>> = HashMap::new();
        for ((table, key), row) in keys.iter().zip(current) {
            overlay.entry((table.to_string(), key.to_string())).or_insert(row);
        }
        let mut changes = Vec::with_capacity(ops.len());
        let mut bytes = 0usize;
        for op in ops {
            let slot = overlay.get_mut(&(op.table().to_string(), op.key().to_string())).expect("read above");
            let before = slot.clone();
            let (table, key, after) = match op {
                RowOp::Put { table, key, row } => (table, key, Some(row)),
                RowOp::Delete { table, key } => (table, key, None),
                RowOp::Increment { table, key, field, by } => {
                    let mut row = before.clone().unwrap_or_default();
                    let old = match row.get(&field) {
                        None => 0,
                        Some(Value::Int(n)) => *n,
                        Some(Value::Text(_)) => return Err(TxnError::TypeMismatch { table, key, field }),
                    };
                    let Some(new) = old.checked_add(by) else {
                        return Err(TxnError::Overflow { table, key, field });
                    };
                    row.insert(field, Value::Int(new));
                    (table, key, Some(row))
                }
            };
            *slot = after.clone();
            bytes += table.len() + key.len() + after.as_ref().map_or(0, |r| row_bytes(r).len());
            let before = if self.config.log_before_images { before } else { None };
            bytes += before.as_ref().map_or(0, |r| row_bytes(r).len());
            if bytes > self.config.limits.txn_bytes_max {
                return Err(TxnError::TooLarge(format!(
                    "row images exceed the {}-byte transaction limit",
                    self.config.limits.txn_bytes_max
                )));
            }
            changes.push(RowChange { table, key, before, after });
        }
        Ok(changes)
    }

    /// Executes a transaction: locks its rows, computes images, group-commits, releases the locks.
    /// Blocking: call from a thread that may wait.
    pub fn execute(&self, req: TxnRequest, privileged: bool) -> Result<Committed, TxnError> {
        let admitted = self.admit(&req, privileged)?;
        let guard = self.locks.lock(row_keys(&req));
        let txn = self.prepare(req, guard.waited)?;
        let committed = self.commit.commit(txn, Some(admitted))?;
        drop(guard);
        Ok(committed)
    }

    /// [`Node::execute`] for async callers: row-lock waits and the commit wait do not hold a thread; when this
    /// transaction leads its commit group, the group's write and fsync run on the blocking pool.
    pub async fn execute_async(self: &Arc<Self>, req: TxnRequest, privileged: bool) -> Result<Committed, TxnError> {
        let admitted = self.admit(&req, privileged)?;
        let guard = self.locks.lock_async(row_keys(&req)).await;
        let txn = self.prepare(req, guard.waited)?;
        let enqueued = self.commit.enqueue(txn, Some(admitted));
        if enqueued.leader {
            let node = Arc::clone(self);
            tokio::task::spawn_blocking(move || node.commit.lead().map(AwaitingReplicas::wait_and_reply));
        }
        let committed = self.commit.finish(enqueued).await?;
        drop(guard);
        Ok(committed)
    }

    /// Lets a valid client transaction in unless the node is read-only; it is then counted in flight until it
    /// has its answer.
    fn admit(&self, req: &TxnRequest, privileged: bool) -> Result<Admitted, TxnError> {
        self.validate(req, privileged)?;
        if let Some(why) = self.health.failure() {
            return Err(storage_failed(&why));
        }
        self.writes.admit().ok_or(TxnError::ReadOnly)
    }

    /// Row images and GTID settings of a transaction whose row locks are held. A transaction whose row event
    /// would be over `event_bytes_max` is refused here, before it joins the commit queue.
    fn prepare(&self, req: TxnRequest, waited: bool) -> Result<PreparedTxn, TxnError> {
        let changes = self.images(req.ops)?;
        let (bytes, limit) = (rows_event_body_len(&changes), self.config.limits.event_bytes_max);
        if bytes > limit {
            self.counters.refused_event_too_large.fetch_add(1, Ordering::Relaxed);
            return Err(TxnError::EventTooLarge { bytes, limit });
        }
        Ok(PreparedTxn {
            domain: req.domain.unwrap_or(self.config.default_domain),
            gtid_override: GtidOverride { server: req.server_id, seq: req.seq_no },
            changes,
            flags: if waited { flags::WAITED } else { 0 }
                | if self.config.log_before_images { flags::BEFORE_IMAGES } else { 0 },
            commit_ts_us: None,
        })
    }

    pub fn read_row(&self, table: &str, key: &str) -> Result<Option<Row>, TxnError> {
        self.check_name("table name", table)?;
        Ok(self.store.get(table, key)?)
    }

    /// gtid_slave_pos: the last GTID per domain applied by replication.
    pub fn slave_position(&self) -> GtidPosition {
        self.slave_pos.lock().clone()
    }

    /// gtid_current_pos (what a demoted master connects with, `current_pos`); see [`current_position_of`].
    pub fn current_position(&self) -> GtidPosition {
        current_position_of(self.config.server_id, &self.position(), &self.slave_position())
    }

    /// Sets gtid_slave_pos (CHANGE MASTER with an explicit position); replication must be stopped.
    pub fn set_slave_position(&self, position: &GtidPosition) -> Result<(), NodeError> {
        self.commit_replica_state(|store| store.set_replica_position(position))?;
        *self.slave_pos.lock() = position.clone();
        self.commit.claim_position(position);
        Ok(())
    }

    /// Commits a change of the replica state, durably. That commit makes what the store holds durable with it:
    /// below durability `local`, the binlog is fsynced through it first (under the binlog lock, so that no commit
    /// slips in between), so the store is never durable past the binlog.
    fn commit_replica_state(&self, change: impl FnOnce(&Store) -> Result<(), StoreError>) -> Result<(), NodeError> {
        let durability = self.config.commit.durability;
        self.commit.with_log(|log| -> Result<(), NodeError> {
            log.sync_for_checkpoint(durability)?;
            Ok(change(&self.store)?)
        })
    }

    /// Records replicated transactions passed over without being applied (the skip counter, domain filters) in
    /// gtid_slave_pos, durably: as in MariaDB, a skipped transaction counts as replicated, so a restart does not
    /// fetch it again. Nothing is logged in this node's binlog. A GTID not above gtid_slave_pos in its domain
    /// leaves that domain as it is; each one raises its domain's seq_no counter.
    pub fn skip_replicated(&self, gtids: &[Gtid]) -> Result<(), NodeError> {
        let newer: Vec<Gtid> = {
            let have = self.slave_pos.lock();
            gtids.iter().copied().filter(|g| have.get(g.domain).is_none_or(|h| g.seq > h.seq)).collect()
        };
        if newer.is_empty() {
            return Ok(());
        }
        self.commit_replica_state(|store| store.add_replica_gtids(&newer))?;
        let mut position = GtidPosition::new();
        {
            let mut have = self.slave_pos.lock();
            for g in newer {
                if have.get(g.domain).is_none_or(|h| g.seq > h.seq) {
                    have.set(g);
                }
                position.set(g);
            }
        }
        self.commit.claim_position(&position);
        // Waits for a position see gtid_slave_pos too: wake them. Taking the watch's lock (after releasing
        // slave_pos) orders this with a waiter that looked at slave_pos before it began to wait.
        drop(self.watch.position.lock());
        self.watch.moved.notify_all();
        self.watch.moved_async.notify_waiters();
        Ok(())
    }

    /// A replicated GTID refused by strict mode; in this node's own domain, below what it wrote itself, it means
    /// two masters write one domain.
    fn strict_error(&self, v: StrictModeViolation, gtid: Gtid) -> TxnError {
        let own = self.config.server_id;
        if v.have.server == own && gtid.server != own && gtid.domain == self.config.default_domain {
            TxnError::TwoMasters(v)
        } else {
            TxnError::Strict(v)
        }
    }

    /// Row-based replication's consistency check: the row here must be what the master found, its before image
    /// (with `full_images`, an absent before image means the row must be absent; without, only logged before
    /// images are checked). `pending` holds the rows as the transactions ahead of this one that have not
    /// committed yet leave them. A mismatch means the servers have diverged.
    pub fn check_before_images(
        &self,
        changes: &[RowChange],
        full_images: bool,
        pending: &HashMap<(String, String), Option<Row>>,
    ) -> Result<(), TxnError> {
        let checked = |c: &&RowChange| full_images || c.before.is_some();
        // Several changes of one transaction may touch a row: only its first before image is the row as found.
        let mut seen = std::collections::HashSet::new();
        let firsts: Vec<&RowChange> =
            changes.iter().filter(checked).filter(|c| seen.insert((c.table.as_str(), c.key.as_str()))).collect();
        let unknown: Vec<(&str, &str)> = firsts
            .iter()
            .filter(|c| !pending.contains_key(&(c.table.clone(), c.key.clone())))
            .map(|c| (c.table.as_str(), c.key.as_str()))
            .collect();
        let mut stored = self.store.read_rows(&unknown)?.into_iter();
        for change in firsts {
            let row = match pending.get(&(change.table.clone(), change.key.clone())) {
                Some(row) => row.clone(),
                None => stored.next().expect("one stored row per unknown key"),
            };
            if change.before != row {
                return Err(TxnError::RowMismatch { table: change.table.clone(), key: change.key.clone() });
            }
        }
        Ok(())
    }

    /// Whether strict mode accepts this replicated GTID now (the commit checks it again).
    pub fn check_replicated_gtid(&self, gtid: Gtid) -> Result<(), TxnError> {
        self.commit.check_gtid(gtid).map_err(|v| self.strict_error(v, gtid))
    }

    /// Commits replicated transactions (already checked by the caller, in an order that keeps each domain's)
    /// as one batch: their rows locked together, all entered into the commit queue, then led by this thread,
    /// so they normally share one group and one fsync. Blocking. Results come in the batch's order.
    pub fn commit_replicated_batch(&self, batch: Vec<(GtidEvent, Vec<RowChange>)>) -> Vec<Result<Committed, TxnError>> {
        let keys: Vec<(String, String)> =
            batch.iter().flat_map(|(_, changes)| changes.iter().map(|c| (c.table.clone(), c.key.clone()))).collect();
        let guard = self.locks.lock(keys);
        let mut lead = false;
        let mut waiting = Vec::with_capacity(batch.len());
        for (header, changes) in batch {
            let gtid = header.gtid;
            let txn = PreparedTxn {
                domain: gtid.domain,
                gtid_override: GtidOverride { server: Some(gtid.server), seq: Some(gtid.seq) },
                changes,
                flags: header.flags | flags::REPLICATED,
                commit_ts_us: Some(header.commit_ts_us),
            };
            let enqueued = self.commit.enqueue(txn, None);
            lead |= enqueued.leader;
            waiting.push((gtid, enqueued));
        }
        let collect = |waiting: Vec<(Gtid, crate::commit::Enqueued)>| -> Vec<Result<Committed, TxnError>> {
            waiting
                .into_iter()
                .map(|(gtid, enqueued)| {
                    self.commit.finish_blocking(enqueued).map_err(|e| match e {
                        CommitError::Strict(v) => self.strict_error(v, gtid),
                        other => other.into(),
                    })
                })
                .collect()
        };
        let results = if !lead {
            collect(waiting)
        } else if self.config.commit.mode == CommitMode::NaiveScheduling {
            // The naive leader waits for every member's own store part, which these waits do: lead elsewhere.
            std::thread::scope(|s| {
                s.spawn(|| self.commit.lead().map(send_after_replicas));
                collect(waiting)
            })
        } else {
            if let Some(held) = self.commit.lead() {
                send_after_replicas(held);
            }
            collect(waiting)
        };
        drop(guard);
        results
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

    /// Makes the store durable and logs a checkpoint event. The store is frozen under the binlog lock, but
    /// written to disk outside it, so commits go on during the checkpoint's fsync.
    pub fn checkpoint(&self) -> Result<Option<BinlogCoord>, NodeError> {
        let durability = self.config.commit.durability;
        let flush = self.commit.with_log(|log| -> Result<_, CommitError> {
            log.sync_for_checkpoint(durability)?;
            Ok(self.store.begin_flush())
        })?;
        let (through, _) = flush.write(true)?;
        self.commit.with_log(|log| log.record_checkpoint(through))?;
        Ok(through)
    }

    /// Closes the current binlog file and starts the next (FLUSH LOGS); returns the new file's name.
    pub fn flush_logs(&self) -> Result<String, NodeError> {
        let durability = self.config.commit.durability;
        self.commit.with_log(|log| {
            log.rotate(durability)?;
            Ok(file_name(log.binlog.coord().file_seq))
        })
    }

    /// RESET MASTER [TO first_seq]: deletes every binlog file and empties gtid_binlog_state; the binlog starts
    /// again with file `first_seq`. The store (the data) is untouched and gtid_slave_pos stays. The seq_no
    /// counters are kept unless `reuse_seq_nos` (MariaDB's behaviour, by the caller's explicit choice): kept, the
    /// next GTIDs continue above the old ones, and the high-water mark keeps them so across restarts too. The
    /// caller guards against replicas and client writes. Returns the files deleted.
    pub fn reset_master(&self, first_seq: u64, reuse_seq_nos: bool) -> Result<Vec<String>, NodeError> {
        let durability = self.config.commit.durability;
        let removed = self.commit.with_log(|log| -> Result<Vec<String>, NodeError> {
            log.checkpoint(durability)?;
            let dir = log.binlog.dir().to_path_buf();
            if reuse_seq_nos {
                hwm::write_on(&**log.binlog.fs(), &dir, &BTreeMap::new())?;
                log.reset_reservation();
            } else {
                hwm::raise_on(&**log.binlog.fs(), &dir, log.binlog.state().position().iter())?;
            }
            reset::write_intent(&**log.binlog.fs(), &dir, reset::ResetIntent { first_seq })?;
            // From here a failure leaves the intent: the node stops acknowledging, and its restart completes the
            // reset.
            let done = log
                .binlog
                .reset(first_seq)
                .map_err(NodeError::from)
                .and_then(|removed| Ok((removed, self.store.rebase(log.binlog.coord())?)))
                .and_then(|(removed, ())| Ok((removed, reset::clear_intent(&**log.binlog.fs(), &dir)?)));
            let removed = match done {
                Ok((removed, ())) => removed,
                Err(e) => {
                    let why = self.health.fail(format!("RESET MASTER: {e}"));
                    return Err(NodeError::Recovery(why));
                }
            };
            log.durable_through = Some(log.binlog.coord());
            *self.watch.position.lock() = GtidPosition::new();
            *self.watch.end.lock() = log.binlog.coord();
            self.recent.lock().clear();
            if reuse_seq_nos {
                self.commit.reset_counters(&self.slave_position());
            }
            Ok(removed)
        })?;
        tracing::warn!(removed = ?removed, first_file = %file_name(first_seq), reuse_seq_nos, "RESET MASTER");
        self.watch.moved.notify_all();
        self.watch.moved_async.notify_waiters();
        Ok(removed)
    }

    /// FLUSH BINARY LOGS DELETE_DOMAIN_ID=(...): rotates, the new file's GTID list leaving out the domains no
    /// binlog file still present holds (all or nothing: one that a file may hold refuses the whole call, and
    /// nothing changes). The domains' seq_no counters stay, so their GTIDs are never handed out again. Returns
    /// the new file's name and what was deleted.
    pub fn flush_logs_deleting_domains(
        &self,
        domains: &[DomainId],
    ) -> Result<(String, DomainDeletion), DeleteDomainError> {
        let durability = self.config.commit.durability;
        self.commit.with_log(|log| {
            let oldest = log.binlog.file_names()[0].clone();
            let began =
                read_gtid_list_on(&**log.binlog.fs(), &log.binlog.dir().join(&oldest)).map_err(NodeError::from)?;
            let deletion = check_deletion(log.binlog.state(), &BinlogState::from_gtids(began), &oldest, domains)?;
            let newest: Vec<Gtid> =
                deletion.deleted.iter().filter_map(|&d| log.binlog.state().position().get(d)).collect();
            log.rotate_forgetting(durability, &deletion.deleted).map_err(NodeError::from)?;
            {
                let mut position = self.watch.position.lock();
                for g in newest {
                    if position.get(g.domain) == Some(g) {
                        position.remove(g.domain);
                    }
                }
            }
            if !deletion.deleted.is_empty() {
                tracing::info!(deleted = ?deletion.deleted, "domains deleted from the binlog state");
            }
            Ok((file_name(log.binlog.coord().file_seq), deletion))
        })
    }

    /// Deletes binlog files before `file` (PURGE BINARY LOGS TO); refuses to touch files recovery still needs.
    pub fn purge_logs_before(&self, file: &str) -> Result<Vec<String>, NodeError> {
        self.purge_logs(file, &[]).map_err(|e| match e {
            PurgeError::Node(e) => e,
            in_use => NodeError::Binlog(BinlogError::Invalid(in_use.to_string())),
        })
    }

    /// PURGE BINARY LOGS TO `file`, refusing (touching nothing) when a connected replica still reads a file it
    /// would delete, or recovery still needs one.
    pub fn purge_logs(&self, file: &str, readers: &[ReaderNeed]) -> Result<Vec<String>, PurgeError> {
        let durability = self.config.commit.durability;
        self.commit.with_log(|log| {
            if let Some(at) = log.binlog.file_names().iter().position(|f| f == file) {
                for name in &log.binlog.file_names()[..at] {
                    let seq = file_seq(name).expect("index holds binlog names");
                    if let Some(reader) = reader_of(seq, readers) {
                        return Err(PurgeError::InUse { file: name.clone(), replica: reader.replica.clone() });
                    }
                }
            }
            let needed_from = recovery_needs_from(log, durability).map_err(NodeError::from)?;
            Ok(log.binlog.purge_before(file, needed_from).map_err(NodeError::from)?)
        })
    }

    /// Binlog expiry: deletes the oldest files `policy` says are due, never one recovery or a connected replica
    /// still needs. Returns the plan carried out (what was purged, and which replica held files back).
    pub fn expire_logs(&self, policy: ExpiryPolicy, readers: &[ReaderNeed]) -> Result<ExpiryPlan, NodeError> {
        let durability = self.config.commit.durability;
        self.commit.with_log(|log| {
            let now = std::time::SystemTime::now();
            let facts: Vec<FileFacts> = log
                .binlog
                .file_names()
                .iter()
                .map(|name| {
                    let (fs, path) = (log.binlog.fs(), log.binlog.dir().join(name));
                    let age =
                        fs.modified(&path).ok().and_then(|m| now.duration_since(m).ok()).map_or(0, |d| d.as_secs());
                    FileFacts {
                        name: name.clone(),
                        seq: file_seq(name).expect("index holds binlog names"),
                        bytes: fs.file_len(&path).unwrap_or(0),
                        age_seconds: age,
                    }
                })
                .collect();
            // A checkpoint (to learn what recovery needs) only when something is due.
            let first = expiry::plan(&facts, policy, u64::MAX, readers);
            if first.purge.is_empty() {
                return Ok(first);
            }
            let plan = expiry::plan(&facts, policy, recovery_needs_from(log, durability)?, readers);
            if let Some(last) = plan.purge.last() {
                let at = facts.iter().position(|f| &f.name == last).expect("planned from these files");
                log.binlog.purge_before(&facts[at + 1].name, u64::MAX)?;
            }
            Ok(plan)
        })
    }

    /// SHOW BINLOG EVENTS IN `file`: its events as `request` says, bounded by what is completely written.
    pub fn binlog_events_in(&self, file: &str, request: ListingRequest) -> Result<Vec<EventRow>, ListingError> {
        let (listed, coord) =
            self.commit.with_log(|log| (log.binlog.file_names().iter().any(|f| f == file), log.binlog.coord()));
        let Some(seq) = file_seq(file).filter(|_| listed) else {
            return Err(ListingError::NoSuchFile { file: file.to_string() });
        };
        let end = if seq == coord.file_seq { Some(coord.offset) } else { request.end };
        list_events(&self.binlog_dir().join(file), ListingRequest { end, ..request })
    }

    pub fn binlog_dir(&self) -> PathBuf {
        self.config.data_dir.join("binlog")
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

    /// Starts the periodic checkpointer; it ends when [`Node::stop`] is called.
    pub fn start_checkpointer(self: &Arc<Self>) -> std::thread::JoinHandle<()> {
        let node = Arc::clone(self);
        std::thread::Builder::new()
            .name("checkpointer".into())
            .spawn(move || {
                let interval = node.config.checkpoint_interval;
                let mut last = (Instant::now(), node.counters.snapshot().commits);
                while !node.stopping.load(Ordering::SeqCst) {
                    std::thread::park_timeout(CHECKPOINT_POLL.min(interval));
                    if node.health.is_failed() {
                        continue;
                    }
                    let commits = node.counters.snapshot().commits;
                    let due = last.0.elapsed() >= interval && commits != last.1;
                    if due || node.store.unflushed_rows() > UNFLUSHED_ROWS_MAX {
                        if let Err(e) = node.checkpoint() {
                            tracing::error!("checkpoint failed: {e}");
                        }
                        last = (Instant::now(), commits);
                    }
                }
            })
            .expect("spawn checkpointer")
    }

    /// Stops background work and makes the store durable (a clean shutdown needs no replay); brings the seq_no
    /// high-water mark down to what was used, so a clean restart leaves no gap.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        if self.health.is_failed() {
            tracing::error!("storage failed earlier: no final checkpoint; the restart replays the binlog");
            return;
        }
        if let Err(e) = self.checkpoint() {
            tracing::error!("final checkpoint failed: {e}");
        }
        let settled = self.commit.with_log(|log| {
            let used = log.binlog.state().position().iter().map(|g| (g.domain, g.seq)).collect();
            log.settle_reservation(used)
        });
        if let Err(e) = settled {
            tracing::error!("{e}");
        }
    }
}

/// The first binlog file crash recovery needs: it replays from the last checkpoint on (taken now). A rotation
/// checkpoints before closing a file, so a checkpoint in an older, closed file covers all of its transactions:
/// replay starts in the next one.
fn recovery_needs_from(log: &mut CommitLog, durability: Durability) -> Result<u64, CommitError> {
    let current = log.binlog.coord().file_seq;
    Ok(match log.checkpoint(durability)? {
        Some(c) if c.file_seq < current => c.file_seq + 1,
        Some(c) => c.file_seq,
        None => 1,
    })
}

impl Drop for Node {
    /// The store's close makes its pending non-durable flushes durable. Below durability `local` those may
    /// hold commits the binlog has not fsynced: fsync it first, or, when that cannot be done (the storage
    /// failed), fence the store so that the close writes nothing and the restart replays them from the binlog.
    fn drop(&mut self) {
        let durability = self.config.commit.durability;
        if durability.fsyncs() {
            return;
        }
        let synced =
            !self.health.is_failed() && self.commit.with_log(|log| log.sync_for_checkpoint(durability)).is_ok();
        if !synced {
            self.store.fence();
        }
    }
}

/// The refusal of a client transaction after a storage failure (protocol error `NODE_FAILED`).
fn storage_failed(why: &str) -> TxnError {
    TxnError::NodeFailed(format!(
        "storage failed, the node is read-only and acknowledges nothing until it is restarted: {why}"
    ))
}

/// gtid_current_pos by MariaDB's rule: per domain, the gtid_binlog_pos GTID when its server_id is this server's
/// own and its seq_no is above gtid_slave_pos's in that domain, otherwise gtid_slave_pos's. A domain only in
/// gtid_slave_pos is taken from it; a domain only in the binlog is included only when this server wrote its
/// newest GTID there: one whose newest binlog GTID came from another server (replicated, or logged with a
/// client-set server_id) and is not in gtid_slave_pos is left out, as MariaDB leaves it out (its
/// `rpl_slave_state::iterate` drops binlog GTIDs of other server_ids before merging).
pub fn current_position_of(server_id: ServerId, binlog_pos: &GtidPosition, slave_pos: &GtidPosition) -> GtidPosition {
    let mut current = slave_pos.clone();
    for g in binlog_pos.iter().filter(|g| g.server == server_id) {
        if slave_pos.get(g.domain).is_none_or(|s| g.seq > s.seq) {
            current.set(g);
        }
    }
    current
}

/// Replies to clients whose transactions shared a group led by replication's applier: they wait for this node's
/// replicas on a thread of their own, for the applier never waits for replicas (it would stall on a node whose
/// replicas are not there, as on any replica). Only a node taking client writes while it replicates (several
/// masters) gets here; each such thread lives at most the semi-sync timeout.
fn send_after_replicas(held: AwaitingReplicas) {
    let slot = Arc::new(Mutex::new(Some(held)));
    let theirs = slot.clone();
    let spawned = std::thread::Builder::new()
        .name("semi-sync-reply".into())
        .spawn(move || theirs.lock().take().map(AwaitingReplicas::wait_and_reply));
    if let Err(e) = spawned {
        tracing::warn!("cannot start a thread for semi-sync replies ({e}); the applier waits for them itself");
        if let Some(held) = slot.lock().take() {
            held.wait_and_reply();
        }
    }
}

/// The rows a transaction locks.
fn row_keys(req: &TxnRequest) -> Vec<(String, String)> {
    req.ops.iter().map(|op| (op.table().to_string(), op.key().to_string())).collect()
}

fn summary(
    gtid: Gtid,
    commit_id: u64,
    flags: u8,
    commit_ts_us: u64,
    start: BinlogCoord,
    tables: Vec<String>,
    rows: u32,
) -> EventSummary {
    EventSummary {
        seq: 0,
        gtid: gtid.to_string(),
        domain: gtid.domain,
        server_id: gtid.server,
        seq_no: gtid.seq,
        commit_id,
        flags,
        commit_ts_us,
        file: file_name(start.file_seq),
        offset: start.offset,
        tables,
        rows,
    }
}

fn push_recent(recent: &mut VecDeque<EventSummary>, mut entry: EventSummary) {
    entry.seq = recent.back().map_or(1, |e| e.seq + 1);
    if recent.len() == RECENT_EVENTS_MAX {
        recent.pop_front();
    }
    recent.push_back(entry);
}

/// Applies to the store every transaction logged after `applied` (all of them for a new store), and fills the
/// recent-events ring from the last file. Returns how many transactions were replayed.
fn replay(
    binlog: &BinlogWriter,
    store: &Store,
    applied: Option<BinlogCoord>,
    recent: &Mutex<VecDeque<EventSummary>>,
) -> Result<u64, NodeError> {
    let files = binlog.file_names().to_vec();
    let last_seq = binlog.coord().file_seq;
    let mut replayed = 0u64;
    let mut batch: Vec<(Vec<RowChange>, Option<Gtid>)> = Vec::new();
    let mut through = applied;
    for name in &files {
        let seq = file_seq(name).expect("index holds binlog names");
        let needed = applied.is_none_or(|a| seq >= a.file_seq);
        if !needed && seq != last_seq {
            continue;
        }
        let path = binlog.dir().join(name);
        let mut reader = TransactionReader::new(FileReader::open_at_on(&**binlog.fs(), &path, MAGIC.len() as u64)?);
        for item in reader.by_ref() {
            let Item::Transaction(txn) = item? else {
                continue;
            };
            let end = BinlogCoord { file_seq: seq, offset: txn.end_offset };
            if seq == last_seq {
                let start = BinlogCoord { file_seq: seq, offset: txn.offset };
                let mut tables: Vec<String> = txn.changes.iter().map(|c| c.table.clone()).collect();
                tables.dedup();
                let h = txn.header;
                push_recent(
                    &mut recent.lock(),
                    summary(h.gtid, h.commit_id, h.flags, h.commit_ts_us, start, tables, txn.changes.len() as u32),
                );
            }
            if applied.is_some_and(|a| end <= a) {
                continue;
            }
            let replicated = (txn.header.flags & flags::REPLICATED != 0).then_some(txn.gtid());
            batch.push((txn.changes, replicated));
            through = Some(end);
            replayed += 1;
            if batch.len() >= REPLAY_BATCH_TXNS {
                store.apply_group(batch.iter().map(|(c, r)| (c.as_slice(), *r)), through.expect("set above"));
                store.flush(false)?;
                batch.clear();
            }
        }
    }
    if !batch.is_empty() {
        store.apply_group(batch.iter().map(|(c, r)| (c.as_slice(), *r)), through.expect("set above"));
    }
    Ok(replayed)
}

#[cfg(test)]
mod tests {
    use super::*;

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

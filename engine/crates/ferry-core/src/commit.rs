//! Group commit: many concurrent transactions, one binlog write and one fsync per group, commit order kept.
//!
//! A committing thread joins the queue. The first to find it empty is the **leader**: it takes the binlog lock,
//! (optionally waits a bounded time for more members), takes the whole queue, assigns GTIDs in queue order,
//! writes every member's events with one write, does one fsync, applies the group to the store in the same
//! order and wakes the followers, who only wait. While it works, the next arrivals form the next queue, whose
//! leader waits for the binlog lock: binlog order = commit order = visibility order.
//!
//! For comparison, [`CommitMode::PerTxnFsync`] makes every transaction its own group, and
//! [`CommitMode::NaiveScheduling`] keeps grouped fsyncs but lets each thread apply its own store part after
//! the previous one signals it (seed 002's "naive" thread scheduling).

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::binlog::event::{encode_event, flags, Event, GtidEvent};
use crate::binlog::writer::{now_us, BinlogWriter};
use crate::binlog::BinlogCoord;
use crate::gtid::{DomainId, Gtid, SeqNo, ServerId};
use crate::gtid_alloc::{GtidAllocator, StrictModeViolation};
use crate::row::RowChange;
use crate::store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommitMode {
    Group,
    PerTxnFsync,
    NaiveScheduling,
}

impl std::str::FromStr for CommitMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "group" => Ok(CommitMode::Group),
            "per-txn-fsync" => Ok(CommitMode::PerTxnFsync),
            "naive-scheduling" => Ok(CommitMode::NaiveScheduling),
            other => Err(format!("unknown commit mode {other:?}: expected group, per-txn-fsync or naive-scheduling")),
        }
    }
}

/// When a commit is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// After the group's binlog fsync.
    Local,
    /// After the group's binlog write, without fsync (the benchmark ceiling; a crash may lose recent commits).
    None,
}

impl std::str::FromStr for Durability {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "local" => Ok(Durability::Local),
            "none" => Ok(Durability::None),
            "network" | "local+network" => {
                Err(format!("durability {s:?} needs semi-synchronous replicas, which this node does not support yet"))
            }
            other => Err(format!("unknown durability {other:?}: expected local or none")),
        }
    }
}

#[derive(Debug, Clone)]
pub struct CommitConfig {
    pub mode: CommitMode,
    pub durability: Durability,
    /// The leader waits for the queue to reach this many members before writing (1 = do not wait)…
    pub wait_count: usize,
    /// …but never longer than this (0 = do not wait).
    pub wait_us: u64,
    /// Refuse explicit GTIDs whose seq_no is not above the domain's counter.
    pub strict_mode: bool,
}

/// Which GTID parts a privileged client set for its transaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GtidOverride {
    pub server: Option<ServerId>,
    pub seq: Option<SeqNo>,
}

/// A transaction whose row images are known and locks are held; its GTID is assigned at commit.
#[derive(Debug, Clone)]
pub struct PreparedTxn {
    pub domain: DomainId,
    pub gtid_override: GtidOverride,
    pub changes: Vec<RowChange>,
    /// [`flags`] for the GTID event.
    pub flags: u8,
}

/// What a successful commit returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Committed {
    pub gtid: Gtid,
    pub commit_id: u64,
    pub commit_ts_us: u64,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum CommitError {
    #[error(transparent)]
    Strict(#[from] StrictModeViolation),
    /// The binlog or the store failed; the node refuses writes from then on (nothing was acknowledged).
    #[error("node cannot commit: {0}")]
    Failed(String),
}

/// One transaction of a committed group, as reported to observers.
#[derive(Debug, Clone)]
pub struct CommittedTxn {
    pub committed: Committed,
    pub flags: u8,
    pub start: BinlogCoord,
    pub end: BinlogCoord,
    pub tables: Vec<String>,
    pub rows: u32,
}

/// What the leader reports after each group.
#[derive(Debug, Clone)]
pub struct GroupReport {
    pub txns: Vec<CommittedTxn>,
    /// Time the group's fsync took (None when durability is `none`).
    pub fsync: Option<Duration>,
    pub bytes: u64,
}

/// Everything behind the binlog lock.
pub struct CommitLog {
    pub binlog: BinlogWriter,
    pub store: Arc<Store>,
    /// Next group's commit id (stamped on each member's GTID event).
    next_commit_id: u64,
    /// Set when a write or fsync failed: the node then refuses all further commits.
    failed: Option<String>,
    /// The coordinate the store is known durable through (the last checkpoint).
    pub durable_through: Option<BinlogCoord>,
}

impl CommitLog {
    pub fn new(binlog: BinlogWriter, store: Arc<Store>, durable_through: Option<BinlogCoord>) -> Self {
        CommitLog { binlog, store, next_commit_id: 1, failed: None, durable_through }
    }

    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    fn fail(&mut self, why: String) -> CommitError {
        tracing::error!("commit pipeline failed, refusing writes from now on: {why}");
        self.failed = Some(why.clone());
        CommitError::Failed(why)
    }

    /// Makes the store durable through everything applied and logs a checkpoint event.
    pub fn checkpoint(&mut self, durability: Durability) -> Result<Option<BinlogCoord>, CommitError> {
        if durability == Durability::None {
            // The store must never be durable ahead of the binlog.
            self.binlog.sync().map_err(|e| self.fail(e.to_string()))?;
        }
        let through = self.store.checkpoint().map_err(|e| self.fail(e.to_string()))?;
        if let Some(through) = through {
            if self.durable_through != Some(through) {
                self.binlog.write_checkpoint(through).map_err(|e| self.fail(e.to_string()))?;
            }
            self.durable_through = Some(through);
        }
        Ok(through)
    }

    /// Checkpoints, then closes the current binlog file and opens the next.
    pub fn rotate(&mut self, durability: Durability) -> Result<(), CommitError> {
        self.checkpoint(durability)?;
        self.binlog.rotate().map_err(|e| self.fail(e.to_string()))
    }
}

enum TicketState {
    Waiting,
    /// Naive scheduling: the binlog part is done; apply your own store part when `turn` comes.
    Binlogged { turn: usize, txn: PreparedTxn, end: BinlogCoord, committed: Committed },
    Done(Result<Committed, CommitError>),
}

struct Ticket {
    txn: Mutex<Option<PreparedTxn>>,
    state: Mutex<TicketState>,
    cv: Condvar,
}

impl Ticket {
    fn finish(&self, result: Result<Committed, CommitError>) {
        *self.state.lock() = TicketState::Done(result);
        self.cv.notify_one();
    }
}

/// Naive scheduling's baton: whose turn it is to apply its store part.
#[derive(Default)]
struct Baton {
    turn: Mutex<usize>,
    passed: Condvar,
}

type GroupHook = Box<dyn Fn(&GroupReport) + Send + Sync>;

pub struct GroupCommit {
    config: CommitConfig,
    alloc: Arc<GtidAllocator>,
    queue: Mutex<Vec<Arc<Ticket>>>,
    queue_grew: Condvar,
    log: Mutex<CommitLog>,
    /// The same store the log applies to, for naive scheduling's per-thread applies.
    store: Arc<Store>,
    baton: Arc<Baton>,
    on_group: GroupHook,
}

impl GroupCommit {
    pub fn new(config: CommitConfig, alloc: Arc<GtidAllocator>, log: CommitLog, on_group: GroupHook) -> Self {
        GroupCommit {
            config,
            alloc,
            queue: Mutex::new(Vec::new()),
            queue_grew: Condvar::new(),
            store: log.store.clone(),
            log: Mutex::new(log),
            baton: Arc::new(Baton::default()),
            on_group,
        }
    }

    pub fn config(&self) -> &CommitConfig {
        &self.config
    }

    /// Runs `f` with the binlog lock held (checkpoints, rotation, purge, status).
    pub fn with_log<T>(&self, f: impl FnOnce(&mut CommitLog) -> T) -> T {
        f(&mut self.log.lock())
    }

    /// Commits one transaction; blocks until it is durable (per the durability setting) and visible.
    pub fn commit(&self, txn: PreparedTxn) -> Result<Committed, CommitError> {
        let ticket = Arc::new(Ticket { txn: Mutex::new(Some(txn)), state: Mutex::new(TicketState::Waiting), cv: Condvar::new() });
        if self.config.mode == CommitMode::PerTxnFsync {
            let mut log = self.log.lock();
            self.run_group(&mut log, std::slice::from_ref(&ticket));
            return Self::take_result(&ticket);
        }
        let leader = {
            let mut queue = self.queue.lock();
            queue.push(ticket.clone());
            if queue.len() >= self.config.wait_count.max(1) {
                self.queue_grew.notify_one();
            }
            queue.len() == 1
        };
        if leader {
            let mut log = self.log.lock();
            self.wait_for_members();
            let group = std::mem::take(&mut *self.queue.lock());
            self.run_group(&mut log, &group);
        }
        self.wait(&ticket)
    }

    /// binlog_commit_wait_count / _usec: a bounded wait for more members before the write.
    fn wait_for_members(&self) {
        let want = self.config.wait_count;
        if want <= 1 || self.config.wait_us == 0 {
            return;
        }
        let deadline = Instant::now() + Duration::from_micros(self.config.wait_us);
        let mut queue = self.queue.lock();
        while queue.len() < want {
            if self.queue_grew.wait_until(&mut queue, deadline).timed_out() {
                break;
            }
        }
    }

    fn take_result(ticket: &Ticket) -> Result<Committed, CommitError> {
        match std::mem::replace(&mut *ticket.state.lock(), TicketState::Waiting) {
            TicketState::Done(r) => r,
            _ => unreachable!("a ticket is finished before its group returns"),
        }
    }

    /// A member waits for its leader; under naive scheduling it then applies its own store part in turn.
    fn wait(&self, ticket: &Ticket) -> Result<Committed, CommitError> {
        let mut state = ticket.state.lock();
        loop {
            match std::mem::replace(&mut *state, TicketState::Waiting) {
                TicketState::Waiting => ticket.cv.wait(&mut state),
                TicketState::Done(r) => return r,
                TicketState::Binlogged { turn, txn, end, committed } => {
                    drop(state);
                    return self.apply_in_turn(turn, &txn, end, committed);
                }
            }
        }
    }

    fn apply_in_turn(&self, turn: usize, txn: &PreparedTxn, end: BinlogCoord, committed: Committed) -> Result<Committed, CommitError> {
        let mut current = self.baton.turn.lock();
        while *current != turn {
            self.baton.passed.wait(&mut current);
        }
        let result = self
            .store
            .apply([txn.changes.as_slice()], end, false)
            .map(|_| committed)
            .map_err(|e| CommitError::Failed(format!("store apply: {e}")));
        *current += 1;
        self.baton.passed.notify_all();
        result
    }

    /// Gives the transaction its GTID: allocated, or the privileged client's own (checked by strict mode).
    fn assign_gtid(&self, txn: &PreparedTxn) -> Result<Gtid, StrictModeViolation> {
        let o = txn.gtid_override;
        match (o.server, o.seq) {
            (None, None) => Ok(self.alloc.allocate(txn.domain)),
            (server, Some(seq)) => {
                let gtid = Gtid::new(txn.domain, server.unwrap_or(self.alloc.server_id()), seq);
                self.alloc.claim(gtid, self.config.strict_mode)?;
                Ok(gtid)
            }
            (Some(server), None) => {
                let allocated = self.alloc.allocate(txn.domain);
                Ok(Gtid { server, ..allocated })
            }
        }
    }

    /// The leader's work for one group (the binlog lock is held by the caller).
    fn run_group(&self, log: &mut MutexGuard<'_, CommitLog>, group: &[Arc<Ticket>]) {
        if let Some(why) = log.failed() {
            let err = CommitError::Failed(why.to_string());
            group.iter().for_each(|t| t.finish(Err(err.clone())));
            return;
        }
        let commit_id = log.next_commit_id;
        log.next_commit_id += 1;
        let commit_ts_us = now_us();
        let base = log.binlog.coord();
        let mut buf = Vec::with_capacity(group.len() * 256);
        // (member index, prepared transaction, report entry)
        let mut written: Vec<(usize, PreparedTxn, CommittedTxn)> = Vec::with_capacity(group.len());
        for (i, ticket) in group.iter().enumerate() {
            let txn = ticket.txn.lock().take().expect("each ticket is committed once");
            let gtid = match self.assign_gtid(&txn) {
                Ok(g) => g,
                Err(violation) => {
                    ticket.finish(Err(violation.into()));
                    continue;
                }
            };
            let start = BinlogCoord { file_seq: base.file_seq, offset: base.offset + buf.len() as u64 };
            let committed = Committed { gtid, commit_id, commit_ts_us };
            let header = GtidEvent { gtid, commit_id, flags: txn.flags | flags::TRANSACTIONAL, commit_ts_us };
            encode_event(&Event::Gtid(header), &mut buf);
            encode_event(&Event::Rows { changes: txn.changes.clone() }, &mut buf);
            encode_event(&Event::Commit { changes: txn.changes.len() as u32 }, &mut buf);
            let end = BinlogCoord { file_seq: base.file_seq, offset: base.offset + buf.len() as u64 };
            let mut tables: Vec<String> = txn.changes.iter().map(|c| c.table.clone()).collect();
            tables.dedup();
            let entry = CommittedTxn { committed, flags: header.flags, start, end, tables, rows: txn.changes.len() as u32 };
            written.push((i, txn, entry));
        }
        if written.is_empty() {
            return;
        }
        if let Err(e) = log.binlog.append(&buf) {
            let err = log.fail(format!("binlog write: {e}"));
            written.iter().for_each(|(i, _, _)| group[*i].finish(Err(err.clone())));
            return;
        }
        for (_, _, entry) in &written {
            log.binlog.record(entry.committed.gtid);
        }
        let fsync = match self.config.durability {
            Durability::Local => match log.binlog.sync() {
                Ok(took) => took,
                Err(e) => {
                    let err = log.fail(format!("binlog fsync: {e}"));
                    written.iter().for_each(|(i, _, _)| group[*i].finish(Err(err.clone())));
                    return;
                }
            },
            Durability::None => None,
        };
        let through = log.binlog.coord();
        let report = GroupReport { txns: written.iter().map(|(_, _, e)| e.clone()).collect(), fsync, bytes: buf.len() as u64 };
        if self.config.mode == CommitMode::NaiveScheduling {
            self.hand_out_turns(group, written);
        } else {
            let applied = log.store.apply(written.iter().map(|(_, t, _)| t.changes.as_slice()), through, false);
            if let Err(e) = applied {
                let err = log.fail(format!("store apply: {e}"));
                written.iter().for_each(|(i, _, _)| group[*i].finish(Err(err.clone())));
                return;
            }
            (self.on_group)(&report);
            for (i, _, entry) in written {
                group[i].finish(Ok(entry.committed));
            }
        }
        if self.config.mode == CommitMode::NaiveScheduling {
            (self.on_group)(&report);
        }
        if log.binlog.needs_rotation() {
            if let Err(e) = log.rotate(self.config.durability) {
                tracing::error!("binlog rotation failed: {e}");
            }
        }
    }

    /// Naive scheduling: each member applies its own store part in binlog order, passing a baton; the leader
    /// applies its own when its turn comes and keeps the binlog lock until the last member is done.
    fn hand_out_turns(&self, group: &[Arc<Ticket>], written: Vec<(usize, PreparedTxn, CommittedTxn)>) {
        *self.baton.turn.lock() = 0;
        let n = written.len();
        let mut own = None;
        for (turn, (i, txn, entry)) in written.into_iter().enumerate() {
            if i == 0 {
                own = Some((turn, txn, entry));
                continue;
            }
            *group[i].state.lock() = TicketState::Binlogged { turn, txn, end: entry.end, committed: entry.committed };
            group[i].cv.notify_one();
        }
        if let Some((turn, txn, entry)) = own {
            let result = self.apply_in_turn(turn, &txn, entry.end, entry.committed);
            *group[0].state.lock() = TicketState::Done(result);
        }
        let mut current = self.baton.turn.lock();
        while *current < n {
            self.baton.passed.wait(&mut current);
        }
    }
}

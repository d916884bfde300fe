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
//! the previous one signals it (the "naive" thread scheduling of docs/background.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

use crate::admission::Admitted;
use crate::binlog::event::{
    encode_event, encode_rows_event, flags, rows_event_body_len, Event, GtidEvent, MAX_EVENT_BYTES,
};
use crate::binlog::hwm::Reservation;
use crate::binlog::writer::{now_us, BinlogWriter};
use crate::binlog::BinlogCoord;
use crate::fault::StorageHealth;
use crate::gtid::{DomainId, Gtid, SeqNo, ServerId};
use crate::gtid_alloc::{AllocError, GtidAllocator, StrictModeViolation};
use crate::row::RowChange;
use crate::semisync::{Held, SemiSync, WaitOutcome, WaitPoint};
use crate::store::Store;

#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// After the group's binlog fsync.
    Local,
    /// After the group's binlog write and K replicas' confirmations (semi-sync), without a local fsync.
    Network,
    /// After the group's binlog fsync and K replicas' confirmations.
    #[serde(rename = "local+network")]
    LocalAndNetwork,
    /// After the group's binlog write, without fsync (the benchmark ceiling; a crash may lose recent commits).
    None,
}

impl Durability {
    /// Whether groups are fsynced before they are acknowledged.
    pub fn fsyncs(self) -> bool {
        matches!(self, Durability::Local | Durability::LocalAndNetwork)
    }

    /// The name on the command line and in status.
    pub fn name(self) -> &'static str {
        match self {
            Durability::Local => "local",
            Durability::Network => "network",
            Durability::LocalAndNetwork => "local+network",
            Durability::None => "none",
        }
    }

    /// Whether acknowledgements wait for replicas (semi-sync).
    pub fn waits_for_replicas(self) -> bool {
        matches!(self, Durability::Network | Durability::LocalAndNetwork)
    }
}

impl std::str::FromStr for Durability {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "local" => Ok(Durability::Local),
            "network" => Ok(Durability::Network),
            "local+network" => Ok(Durability::LocalAndNetwork),
            "none" => Ok(Durability::None),
            other => Err(format!("unknown durability {other:?}: expected local, network, local+network or none")),
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
    /// [`flags`] for the GTID event; [`flags::REPLICATED`] also records the GTID in the replica state.
    pub flags: u8,
    /// The originating master's commit time, kept for a replicated transaction (lag in seconds is measured
    /// from the origin); None stamps the group's own time.
    pub commit_ts_us: Option<u64>,
}

impl PreparedTxn {
    /// Whether the transaction came from a master (applied by replication) rather than from a client of this
    /// node. Only a client's commit waits for this node's replicas (semi-sync).
    pub fn replicated(&self) -> bool {
        self.flags & flags::REPLICATED != 0
    }
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
    /// The domain's seq_no counter is at `u64::MAX`: the transaction is refused (nothing written), never wrapped.
    #[error("seq_no exhausted in domain {domain}: its newest GTID is {have}, and no seq_no follows {}", SeqNo::MAX)]
    SeqNoExhausted { domain: DomainId, have: Gtid },
    /// The transaction's `Rows` event would be larger than the binlog format allows: refused, nothing written.
    #[error("transaction refused: its row event would be {bytes} bytes, over the {limit}-byte event limit")]
    EventTooLarge { bytes: usize, limit: usize },
    /// The binlog or the store failed; the node refuses writes from then on (nothing was acknowledged).
    #[error("node cannot commit: {0}")]
    Failed(String),
    /// A client's commit written to this node's binlog whose semi-sync wait the node's stop ended before K
    /// replicas confirmed it: it may be on no replica, so it is neither acknowledged nor refused.
    #[error("the node stopped before replicas confirmed this commit: it is in this node's binlog but maybe on no replica; its outcome is unknown")]
    Unconfirmed,
}

impl From<AllocError> for CommitError {
    fn from(e: AllocError) -> Self {
        match e {
            AllocError::Strict(v) => CommitError::Strict(v),
            AllocError::Exhausted { domain, have } => CommitError::SeqNoExhausted { domain, have },
        }
    }
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
    /// End of the group in the binlog (durable when durability is `local`).
    pub through: BinlogCoord,
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
    /// The node's storage health (shared with the store): set by the first failed write, fsync or flush, after
    /// which every commit is refused and nothing more is acknowledged.
    health: Arc<StorageHealth>,
    /// The coordinate the store is known durable through (the last checkpoint).
    pub durable_through: Option<BinlogCoord>,
    /// Below durability `local`: the seq_nos reserved ahead in the high-water mark file (see [`crate::binlog::hwm`]).
    reservation: Option<Reservation>,
    /// Semi-sync `after_sync`: the next leader's turn to make its groups visible (turns are taken in binlog order).
    next_turn: u64,
}

impl CommitLog {
    pub fn new(binlog: BinlogWriter, store: Arc<Store>, durable_through: Option<BinlogCoord>) -> Self {
        let health = store.health().clone();
        CommitLog { binlog, store, next_commit_id: 1, health, durable_through, reservation: None, next_turn: 0 }
    }

    /// Reserves locally allocated seq_nos ahead in the high-water mark before they are written (durability below
    /// `local`, where groups are acknowledged and streamed before their fsync).
    pub fn with_reservation(mut self, reservation: Reservation) -> Self {
        self.reservation = Some(reservation);
        self
    }

    /// Why the storage failed, once it did.
    pub fn failed(&self) -> Option<String> {
        self.health.failure()
    }

    /// Records a storage failure: from now on the node is read-only and acknowledges nothing.
    pub fn fail(&mut self, why: String) -> CommitError {
        CommitError::Failed(self.health.fail(why))
    }

    /// RESET MASTER with `reuse_seq_nos`: the reservation starts from nothing (the mark file was emptied).
    pub fn reset_reservation(&mut self) {
        if let Some(r) = &mut self.reservation {
            r.forget();
        }
    }

    /// A clean stop: the high-water mark comes down to the seq_nos really used, so a clean restart leaves no gap.
    pub fn settle_reservation(&mut self, used: std::collections::BTreeMap<DomainId, SeqNo>) -> Result<(), CommitError> {
        if self.health.is_failed() {
            return Ok(());
        }
        if let Some(r) = &mut self.reservation {
            r.settle(used)
                .map_err(|e| CommitError::Failed(self.health.fail(format!("seq_no high-water mark: {e}"))))?;
        }
        Ok(())
    }

    /// Before freezing the store for a checkpoint: with durability `none` the binlog is not fsynced per group,
    /// and the store must never be durable ahead of the binlog.
    pub fn sync_for_checkpoint(&mut self, durability: Durability) -> Result<(), CommitError> {
        if !durability.fsyncs() {
            self.binlog.sync().map_err(|e| self.fail(format!("binlog fsync: {e}")))?;
        }
        Ok(())
    }

    /// Logs a checkpoint event for a durable store flush through `through`.
    pub fn record_checkpoint(&mut self, through: Option<BinlogCoord>) -> Result<(), CommitError> {
        if let Some(through) = through {
            if self.durable_through != Some(through) {
                self.binlog.write_checkpoint(through).map_err(|e| self.fail(format!("binlog write: {e}")))?;
            }
            self.durable_through = Some(through);
        }
        Ok(())
    }

    /// A whole checkpoint with the binlog lock held throughout (at rotation and at start-up).
    pub fn checkpoint(&mut self, durability: Durability) -> Result<Option<BinlogCoord>, CommitError> {
        self.sync_for_checkpoint(durability)?;
        let through = self.store.checkpoint().map_err(|e| self.fail(format!("store checkpoint: {e}")))?;
        self.record_checkpoint(through)?;
        Ok(through)
    }

    /// Checkpoints, then closes the current binlog file and opens the next.
    pub fn rotate(&mut self, durability: Durability) -> Result<(), CommitError> {
        self.rotate_forgetting(durability, &[])
    }

    /// [`CommitLog::rotate`], the next file's GTID list leaving `domains` out (DELETE_DOMAIN_ID, checked by the
    /// caller).
    pub fn rotate_forgetting(
        &mut self,
        durability: Durability,
        domains: &[crate::gtid::DomainId],
    ) -> Result<(), CommitError> {
        self.checkpoint(durability)?;
        // The domains' seq_nos stay used: the mark keeps them above what the binlog will show.
        let gone: Vec<crate::gtid::Gtid> =
            domains.iter().filter_map(|&d| self.binlog.state().position().get(d)).collect();
        crate::binlog::hwm::raise_on(&**self.binlog.fs(), self.binlog.dir(), gone)
            .map_err(|e| self.fail(format!("seq_no high-water mark: {e}")))?;
        for &domain in domains {
            self.binlog.forget_domain(domain);
        }
        self.binlog.rotate().map_err(|e| self.fail(e.to_string()))
    }
}

/// What the leader tells a member once it is done with it.
enum Outcome {
    Done(Result<Committed, CommitError>),
    /// Naive scheduling: the binlog part is done; apply your own store part when your turn comes.
    Binlogged(NaiveTurn),
}

/// A member's share of the store part under naive scheduling.
struct NaiveTurn {
    txn: PreparedTxn,
    end: BinlogCoord,
    committed: Committed,
    /// Fired by the predecessor (by the leader for the first member).
    my_turn: oneshot::Receiver<()>,
    /// The successor's turn, fired after applying (None for the last member).
    next: Option<oneshot::Sender<()>>,
    /// The last member tells the leader the group is applied.
    group_done: Option<std::sync::mpsc::SyncSender<()>>,
    /// A client transaction's place among the commits in flight, given back once its store part is applied.
    admitted: Option<Admitted>,
}

/// A queued transaction and where its outcome goes.
struct Member {
    txn: PreparedTxn,
    reply: oneshot::Sender<Outcome>,
    /// A client transaction's place among the commits in flight: it goes with the transaction through the queue
    /// and is given back after the reply, so the count covers every transaction until it has its answer.
    admitted: Option<Admitted>,
}

/// What one member is told once the leader is done with it.
struct Reply {
    to: oneshot::Sender<Outcome>,
    outcome: Outcome,
    /// The member was replicated here (see [`PreparedTxn::replicated`]): its reply never waits for replicas.
    replicated: bool,
    admitted: Option<Admitted>,
}

impl Reply {
    fn new(member: Member, outcome: Outcome) -> Self {
        Reply { replicated: member.txn.replicated(), to: member.reply, outcome, admitted: member.admitted }
    }

    /// Whether semi-sync holds this reply back until replicas confirm the group: a client's successful commit.
    fn waits_for_replicas(&self) -> bool {
        !self.replicated && matches!(self.outcome, Outcome::Done(Ok(_)))
    }

    /// This reply as the semi-sync wait's stop leaves it: a commit that waited for replicas becomes
    /// [`CommitError::Unconfirmed`]; any other reply is unchanged.
    fn unconfirmed(self) -> Self {
        if !self.waits_for_replicas() {
            return self;
        }
        Reply { outcome: Outcome::Done(Err(CommitError::Unconfirmed)), ..self }
    }

    fn send(self) {
        let _ = self.to.send(self.outcome);
        // Only now is the transaction no longer in flight.
        drop(self.admitted);
    }
}

/// A group's replies to this node's own clients, held back until K replicas confirm the group (semi-sync).
/// Replicated transactions of the group have had their replies already: a node applying its master's
/// transactions never waits for replicas of its own.
#[must_use = "the held replies are only sent by `wait_and_reply`"]
pub struct AwaitingReplicas {
    semi_sync: Arc<SemiSync>,
    /// End of the group in the binlog: what the replicas must confirm.
    through: BinlogCoord,
    replies: Vec<Reply>,
    /// The group held back from change consumers until the wait ends.
    held: Option<Held>,
}

impl AwaitingReplicas {
    /// Waits (blocking, at most the semi-sync timeout, or until the node stops) for the replicas'
    /// confirmations, then replies.
    pub fn wait_and_reply(self) {
        let stopped = self.semi_sync.wait(self.through) == WaitOutcome::Stopped;
        release_unless(self.held, stopped);
        self.replies.into_iter().map(|r| if stopped { r.unconfirmed() } else { r }).for_each(Reply::send);
    }
}

/// Releases a group held back from change consumers, unless its wait ended `unconfirmed` (the node stops): then
/// it stays held, since it may be on no replica.
fn release_unless(held: Option<Held>, unconfirmed: bool) {
    match held {
        Some(held) if unconfirmed => held.keep(),
        other => drop(other),
    }
}

/// A transaction in the commit queue. When `leader` is set, the caller must run [`GroupCommit::lead`] (on a thread
/// that may block), complete what it hands back with [`AwaitingReplicas::wait_and_reply`], and then, like every
/// member, wait for its outcome with [`GroupCommit::finish`] or [`GroupCommit::finish_blocking`].
pub struct Enqueued {
    reply: oneshot::Receiver<Outcome>,
    pub leader: bool,
}

type GroupHook = Box<dyn Fn(&GroupReport) + Send + Sync>;
/// What a group's members are told, in queue order.
type Outcomes = Vec<Reply>;

pub struct GroupCommit {
    config: CommitConfig,
    alloc: Arc<GtidAllocator>,
    queue: Mutex<Vec<Member>>,
    queue_grew: Condvar,
    log: Mutex<CommitLog>,
    /// The same store the log applies to, for naive scheduling's per-member applies.
    store: Arc<Store>,
    on_group: GroupHook,
    /// With network durability: where groups wait for replicas' confirmations.
    semi_sync: Option<Arc<SemiSync>>,
    /// Told the binlog's new end once a group is written (and fsynced), before it is applied: with semi-sync
    /// `after_sync` replicas must receive it before it is visible.
    on_binlogged: Option<BinlogHook>,
    /// Semi-sync `after_sync`: whose turn it is to make its groups visible (a leader waits for replicas after
    /// letting go of the binlog lock; groups still become visible in binlog order).
    visible_turn: Mutex<u64>,
    turn_passed: Condvar,
}

type BinlogHook = Box<dyn Fn(BinlogCoord) + Send + Sync>;

/// A group written to the binlog: the members refused on the way, and those written with the group's report.
struct WrittenGroup {
    refused: Outcomes,
    written: Vec<(Member, CommittedTxn)>,
    report: Option<GroupReport>,
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
            on_group,
            semi_sync: None,
            on_binlogged: None,
            visible_turn: Mutex::new(0),
            turn_passed: Condvar::new(),
        }
    }

    /// Tells `hook` the binlog's end once each group is written, before it is applied (what replicas may be sent).
    pub fn with_binlogged_hook(mut self, hook: BinlogHook) -> Self {
        self.on_binlogged = Some(hook);
        self
    }

    /// Semi-sync with the `after_sync` wait point (naive scheduling is never combined with semi-sync).
    fn waits_after_sync(&self) -> Option<&Arc<SemiSync>> {
        self.semi_sync.as_ref().filter(|s| s.config().wait_point == WaitPoint::AfterSync)
    }

    /// Makes acknowledgements wait for replicas (durability `network` / `local+network`).
    pub fn with_semi_sync(mut self, semi_sync: Arc<SemiSync>) -> Self {
        self.semi_sync = Some(semi_sync);
        self
    }

    pub fn config(&self) -> &CommitConfig {
        &self.config
    }

    /// Whether strict mode would accept this explicit GTID now (checked again, for real, when it commits).
    pub fn check_gtid(&self, gtid: Gtid) -> Result<(), StrictModeViolation> {
        self.alloc.check(gtid, self.config.strict_mode)
    }

    /// Raises where seq_nos are handed out to above `position` (a new gtid_slave_pos, transactions passed over);
    /// strict mode does not compare with it (see [`GtidAllocator::raise_floor`]).
    pub fn claim_position(&self, position: &crate::gtid::GtidPosition) {
        for gtid in position.iter() {
            self.alloc.raise_floor(gtid);
        }
    }

    /// RESET MASTER with `reuse_seq_nos`: the seq_no counters start again from `start`.
    pub fn reset_counters(&self, start: &crate::gtid::GtidPosition) {
        self.alloc.reset(start);
    }

    /// A rewind: the seq_no counters go back to `start`, and allocation stays above `used` (the cut GTIDs).
    pub fn rewind_counters(&self, start: &crate::gtid::GtidPosition, used: impl IntoIterator<Item = Gtid>) {
        self.alloc.rewind(start);
        for gtid in used {
            self.alloc.raise_floor(gtid);
        }
    }

    /// Runs `f` with the binlog lock held (checkpoints, rotation, purge, status).
    pub fn with_log<T>(&self, f: impl FnOnce(&mut CommitLog) -> T) -> T {
        f(&mut self.log.lock())
    }

    /// Joins the commit queue; the first member of an empty queue is its leader. A client transaction brings its
    /// admission, given back once it has its answer.
    pub fn enqueue(&self, txn: PreparedTxn, admitted: Option<Admitted>) -> Enqueued {
        let (reply, outcome) = oneshot::channel();
        let mut queue = self.queue.lock();
        queue.push(Member { txn, reply, admitted });
        if queue.len() >= self.config.wait_count.max(1) {
            self.queue_grew.notify_one();
        }
        Enqueued { reply: outcome, leader: queue.len() == 1 }
    }

    /// Commits one transaction from a thread that may block; returns once it is durable and visible.
    pub fn commit(&self, txn: PreparedTxn, admitted: Option<Admitted>) -> Result<Committed, CommitError> {
        let enqueued = self.enqueue(txn, admitted);
        if !enqueued.leader {
            return self.finish_blocking(enqueued);
        }
        if self.config.mode != CommitMode::NaiveScheduling {
            if let Some(held) = self.lead() {
                held.wait_and_reply();
            }
            return self.finish_blocking(enqueued);
        }
        // Under naive scheduling the leader waits for every member's store part, its own included, which this
        // thread must then do: the leading runs on a thread of its own.
        std::thread::scope(|s| {
            s.spawn(|| self.lead().map(AwaitingReplicas::wait_and_reply));
            self.finish_blocking(enqueued)
        })
    }

    /// Waits (blocking) for the outcome of an enqueued transaction.
    pub fn finish_blocking(&self, enqueued: Enqueued) -> Result<Committed, CommitError> {
        match enqueued.reply.blocking_recv() {
            Ok(Outcome::Done(result)) => result,
            Ok(Outcome::Binlogged(mut turn)) => {
                let _ = std::mem::replace(&mut turn.my_turn, oneshot::channel().1).blocking_recv();
                Ok(self.apply_turn(turn))
            }
            Err(_) => Err(CommitError::Failed("the commit leader went away".into())),
        }
    }

    /// Waits (async) for the outcome of an enqueued transaction.
    pub async fn finish(&self, enqueued: Enqueued) -> Result<Committed, CommitError> {
        match enqueued.reply.await {
            Ok(Outcome::Done(result)) => result,
            Ok(Outcome::Binlogged(mut turn)) => {
                let _ = std::mem::replace(&mut turn.my_turn, oneshot::channel().1).await;
                Ok(self.apply_turn(turn))
            }
            Err(_) => Err(CommitError::Failed("the commit leader went away".into())),
        }
    }

    /// The leader's turn: take the binlog lock, then the whole queue, and commit it. Blocks (write, fsync).
    /// Members hear back as soon as the group is done, except, with semi-sync, this node's clients whose
    /// commits succeeded: their replies come back to the caller, to be sent once the replicas confirm the group
    /// (the next group goes on meanwhile). A caller that must not wait for replicas (replication's applier)
    /// hands them to another thread.
    #[must_use = "held replies must be sent with `AwaitingReplicas::wait_and_reply`"]
    pub fn lead(&self) -> Option<AwaitingReplicas> {
        if let Some(semi_sync) = self.waits_after_sync() {
            self.lead_after_sync(semi_sync);
            return None;
        }
        let mut log = self.log.lock();
        self.wait_for_members();
        let group = std::mem::take(&mut *self.queue.lock());
        let held = self.hold_for_clients(self.semi_sync.as_ref(), &log, &group);
        let outcomes = match self.config.mode {
            CommitMode::Group => self.run_group(&mut log, group, &mut None),
            // No group commit: every member is written and fsynced on its own, in queue order.
            CommitMode::PerTxnFsync => {
                group.into_iter().flat_map(|m| self.run_group(&mut log, vec![m], &mut None)).collect()
            }
            CommitMode::NaiveScheduling => {
                let mut report = None;
                let outcomes = self.run_group(&mut log, group, &mut report);
                // The store part is serial and ordered by hand-offs between members: keep the binlog lock until
                // it is done.
                self.hand_out_turns(outcomes);
                if let Some(report) = report {
                    (self.on_group)(&report);
                }
                Vec::new()
            }
        };
        let through = log.binlog.coord();
        self.rotate_if_needed(&mut log);
        drop(log);
        // Members hear back after the binlog lock is free, so the next group starts while they wake.
        let Some(semi_sync) = &self.semi_sync else {
            outcomes.into_iter().for_each(Reply::send);
            return None;
        };
        let (waiting, now): (Vec<Reply>, Vec<Reply>) = outcomes.into_iter().partition(Reply::waits_for_replicas);
        now.into_iter().for_each(Reply::send);
        if waiting.is_empty() {
            // No commit of a client to confirm (refused, or none): nothing to hold back.
            drop(held);
            return None;
        }
        Some(AwaitingReplicas { semi_sync: semi_sync.clone(), through, replies: waiting, held })
    }

    /// With semi-sync, a group holding a client's transaction is held back from change consumers from where it
    /// starts: registered with the binlog lock held, before the binlog's end can move past it.
    fn hold_for_clients(&self, semi_sync: Option<&Arc<SemiSync>>, log: &CommitLog, group: &[Member]) -> Option<Held> {
        let semi_sync = semi_sync?;
        group.iter().any(|m| !m.txn.replicated()).then(|| semi_sync.hold(log.binlog.coord()))
    }

    /// Semi-sync `after_sync`: the group is written and fsynced under the binlog lock and offered to replicas;
    /// then, the lock let go (the next group goes on), the leader waits for the replicas' confirmations (when the
    /// group has a client commit) and only then applies the group to the store — visible — in binlog order, and
    /// answers every member. A reader of the master never sees a transaction no replica has, unless semi-sync
    /// has fallen back to asynchronous. Blocking, also for replication's applier when its group holds a client
    /// transaction (several masters).
    fn lead_after_sync(&self, semi_sync: &Arc<SemiSync>) {
        let mut log = self.log.lock();
        self.wait_for_members();
        let group = std::mem::take(&mut *self.queue.lock());
        let held = self.hold_for_clients(Some(semi_sync), &log, &group);
        let groups: Vec<WrittenGroup> = match self.config.mode {
            CommitMode::PerTxnFsync => group.into_iter().map(|m| self.write_group(&mut log, vec![m])).collect(),
            _ => vec![self.write_group(&mut log, group)],
        };
        let my_turn = log.next_turn;
        log.next_turn += 1;
        let through = log.binlog.coord();
        if let Some(hook) = &self.on_binlogged {
            hook(through);
        }
        self.rotate_if_needed(&mut log);
        drop(log);
        let clients = groups.iter().flat_map(|g| &g.written).any(|(m, _)| !m.txn.replicated());
        let stopped = clients && semi_sync.wait(through) == WaitOutcome::Stopped;
        release_unless(held, stopped);
        let mut outcomes: Outcomes = Vec::new();
        {
            let mut turn = self.visible_turn.lock();
            while *turn != my_turn {
                self.turn_passed.wait(&mut turn);
            }
            for group in groups {
                outcomes.extend(self.show_group(group));
            }
            *turn += 1;
            self.turn_passed.notify_all();
        }
        outcomes.into_iter().map(|r| if stopped { r.unconfirmed() } else { r }).for_each(Reply::send);
    }

    fn rotate_if_needed(&self, log: &mut CommitLog) {
        if log.failed().is_none() && log.binlog.needs_rotation() {
            if let Err(e) = log.rotate(self.config.durability) {
                tracing::error!("binlog rotation failed: {e}");
            }
        }
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

    /// Naive scheduling: apply this member's store part (its turn has come), then pass the turn on.
    fn apply_turn(&self, turn: NaiveTurn) -> Committed {
        let replicated = turn.txn.replicated().then_some(turn.committed.gtid);
        self.store.apply_group([(turn.txn.changes.as_slice(), replicated)], turn.end);
        match (turn.next, turn.group_done) {
            (Some(next), _) => {
                let _ = next.send(());
            }
            (None, Some(done)) => {
                let _ = done.send(());
            }
            (None, None) => {}
        }
        // Applied, so answered: no longer in flight.
        drop(turn.admitted);
        turn.committed
    }

    /// Naive scheduling: chains the members' turns in binlog order, starts the first and waits (binlog lock
    /// held) until the last has applied.
    fn hand_out_turns(&self, outcomes: Outcomes) {
        let (done_tx, done_rx) = std::sync::mpsc::sync_channel(1);
        let mut members: Vec<(oneshot::Sender<Outcome>, NaiveTurn)> = Vec::new();
        for reply in outcomes {
            match reply.outcome {
                Outcome::Binlogged(turn) => members.push((reply.to, turn)),
                done => {
                    let _ = reply.to.send(done);
                }
            }
        }
        if members.is_empty() {
            return;
        }
        let (first_tx, mut previous_rx) = oneshot::channel();
        let last = members.len() - 1;
        for (i, (reply, mut turn)) in members.into_iter().enumerate() {
            let (next_tx, next_rx) = oneshot::channel();
            turn.my_turn = std::mem::replace(&mut previous_rx, next_rx);
            if i == last {
                turn.group_done = Some(done_tx.clone());
            } else {
                turn.next = Some(next_tx);
            }
            if let Err(Outcome::Binlogged(turn)) = reply.send(Outcome::Binlogged(turn)) {
                // The member is gone (its caller was cancelled): apply its part here so the chain goes on.
                let mut turn = turn;
                let _ = std::mem::replace(&mut turn.my_turn, oneshot::channel().1).blocking_recv();
                self.apply_turn(turn);
            }
        }
        let _ = first_tx.send(());
        let _ = done_rx.recv();
    }

    /// Gives the transaction its GTID: allocated, or the privileged client's own (checked by strict mode).
    fn assign_gtid(&self, txn: &PreparedTxn) -> Result<Gtid, AllocError> {
        let o = txn.gtid_override;
        match (o.server, o.seq) {
            (None, None) => self.alloc.allocate(txn.domain),
            (server, Some(seq)) => {
                let gtid = Gtid::new(txn.domain, server.unwrap_or(self.alloc.server_id()), seq);
                self.alloc.claim(gtid, self.config.strict_mode)?;
                Ok(gtid)
            }
            (Some(server), None) => {
                let allocated = self.alloc.allocate(txn.domain)?;
                Ok(Gtid { server, ..allocated })
            }
        }
    }

    /// The leader's work for one group, with the binlog lock held: GTIDs in queue order, one write, one fsync,
    /// the store apply in the same order. Returns what to tell each member. Under naive scheduling the store
    /// part is left to the members and the group's report is handed back in `pending` for after it.
    fn run_group(&self, log: &mut CommitLog, group: Vec<Member>, pending: &mut Option<GroupReport>) -> Outcomes {
        let written = self.write_group(log, group);
        if self.config.mode != CommitMode::NaiveScheduling || written.report.is_none() {
            return self.show_group(written);
        }
        let WrittenGroup { refused: mut outcomes, written, report } = written;
        outcomes.extend(written.into_iter().map(|(Member { txn, reply, admitted }, e)| {
            // The turn chain is wired up by `hand_out_turns`.
            let (_, my_turn) = oneshot::channel();
            let replicated = txn.replicated();
            let (end, committed) = (e.end, e.committed);
            let turn = NaiveTurn { txn, end, committed, my_turn, next: None, group_done: None, admitted };
            Reply { to: reply, outcome: Outcome::Binlogged(turn), replicated, admitted: None }
        }));
        *pending = report;
        outcomes
    }

    /// Applies a written group to the store (it becomes visible), reports it, and makes its members' replies.
    fn show_group(&self, group: WrittenGroup) -> Outcomes {
        let WrittenGroup { mut refused, written, report } = group;
        let Some(report) = report else {
            return refused;
        };
        self.store.apply_group(
            written.iter().map(|(m, e)| (m.txn.changes.as_slice(), m.txn.replicated().then_some(e.committed.gtid))),
            report.through,
        );
        (self.on_group)(&report);
        refused.extend(written.into_iter().map(|(m, e)| Reply::new(m, Outcome::Done(Ok(e.committed)))));
        refused
    }

    /// Writes a group to the binlog (one write, at most one fsync): GTIDs assigned in queue order.
    fn write_group(&self, log: &mut CommitLog, group: Vec<Member>) -> WrittenGroup {
        let refused_all = |group: Vec<Member>, err: CommitError| WrittenGroup {
            refused: group.into_iter().map(|m| Reply::new(m, Outcome::Done(Err(err.clone())))).collect(),
            written: Vec::new(),
            report: None,
        };
        if let Some(why) = log.failed() {
            return refused_all(group, CommitError::Failed(why));
        }
        let commit_id = log.next_commit_id;
        log.next_commit_id += 1;
        let commit_ts_us = now_us();
        let base = log.binlog.coord();
        let mut buf = Vec::with_capacity(group.len() * 256);
        let mut outcomes: Outcomes = Vec::with_capacity(group.len());
        // Each member that got a GTID, with its report entry.
        let mut written: Vec<(Member, CommittedTxn)> = Vec::with_capacity(group.len());
        for member in group {
            let txn = &member.txn;
            // Client transactions were checked against the node's limit before they were queued; this is the
            // format's own bound, so that no member can make the leader write (or panic on) an unreadable event.
            let rows_bytes = rows_event_body_len(&txn.changes);
            if rows_bytes > MAX_EVENT_BYTES {
                let refused = CommitError::EventTooLarge { bytes: rows_bytes, limit: MAX_EVENT_BYTES };
                outcomes.push(Reply::new(member, Outcome::Done(Err(refused))));
                continue;
            }
            let gtid = match self.assign_gtid(txn) {
                Ok(g) => g,
                Err(refused) => {
                    outcomes.push(Reply::new(member, Outcome::Done(Err(refused.into()))));
                    continue;
                }
            };
            let start = BinlogCoord { file_seq: base.file_seq, offset: base.offset + buf.len() as u64 };
            let commit_ts_us = txn.commit_ts_us.unwrap_or(commit_ts_us);
            let committed = Committed { gtid, commit_id, commit_ts_us };
            let header = GtidEvent { gtid, commit_id, flags: txn.flags | flags::TRANSACTIONAL, commit_ts_us };
            encode_event(&Event::Gtid(header), &mut buf);
            encode_rows_event(&txn.changes, &mut buf);
            encode_event(&Event::Commit { changes: txn.changes.len() as u32 }, &mut buf);
            let end = BinlogCoord { file_seq: base.file_seq, offset: base.offset + buf.len() as u64 };
            let mut tables: Vec<String> = txn.changes.iter().map(|c| c.table.clone()).collect();
            tables.dedup();
            let entry =
                CommittedTxn { committed, flags: header.flags, start, end, tables, rows: txn.changes.len() as u32 };
            written.push((member, entry));
        }
        if written.is_empty() {
            return WrittenGroup { refused: outcomes, written, report: None };
        }
        if let Some(reservation) = &mut log.reservation {
            let allocated = written
                .iter()
                .filter(|(m, _)| !m.txn.replicated() && m.txn.gtid_override.seq.is_none())
                .map(|(_, e)| e.committed.gtid);
            if let Err(e) = reservation.cover(allocated) {
                let err = log.fail(format!("seq_no high-water mark: {e}"));
                outcomes.extend(written.into_iter().map(|(m, _)| Reply::new(m, Outcome::Done(Err(err.clone())))));
                return WrittenGroup { refused: outcomes, written: Vec::new(), report: None };
            }
        }
        let fsyncs = self.config.durability.fsyncs();
        let durable = log.binlog.append(&buf).and_then(|_| if fsyncs { log.binlog.sync() } else { Ok(None) });
        let fsync = match durable {
            Ok(took) => took,
            Err(e) => {
                let err = log.fail(format!("binlog write: {e}"));
                outcomes.extend(written.into_iter().map(|(m, _)| Reply::new(m, Outcome::Done(Err(err.clone())))));
                return WrittenGroup { refused: outcomes, written: Vec::new(), report: None };
            }
        };
        for (_, entry) in &written {
            log.binlog.record(entry.committed.gtid);
        }
        let through = log.binlog.coord();
        let report = GroupReport {
            txns: written.iter().map(|(_, e)| e.clone()).collect(),
            through,
            fsync,
            bytes: buf.len() as u64,
        };
        WrittenGroup { refused: outcomes, written, report: Some(report) }
    }
}

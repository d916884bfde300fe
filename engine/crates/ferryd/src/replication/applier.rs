//! The SQL side of a replication connection: reads the relay log in order and applies each transaction through
//! the node's replicated-apply path (original GTID kept, binlogged, gtid_slave_pos updated in the same atomic
//! state), honouring START ... UNTIL and the connection's delay.
//!
//! With more than one worker it applies in parallel: **in order within a domain** (a transaction enters the
//! commit queue only after its predecessor in the domain has, so both can share a commit group, in order) and
//! **out of order across domains**. `conservative` starts a transaction early only when the master committed
//! it in the same group as its predecessor (same commit id, no row-lock wait, not DDL); `optimistic` starts any
//! transaction early and checks its before images at once: a conflict found then (an earlier transaction of the
//! domain has not committed yet) rolls it back to wait for its predecessors and try again, a bounded number of
//! times before a clear error. A corrupt relay event, a refused transaction or a diverged row stops the
//! connection, naming the relay file and offset, or the GTIDs, or the row.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use ferry_core::binlog::event::flags;
use ferry_core::binlog::reader::Transaction;
use ferry_core::binlog::writer::now_us;
use ferry_core::gtid::{DomainId, GtidPosition};
use ferry_core::node::{Node, ReplicaTurn, TxnError};
use ferry_core::relay::RelayReader;
use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};

use super::shared::Shared;
use super::status::SqlState;

/// How long a waiting side sleeps at most between looks at the stop flag.
const IDLE_WAIT: Duration = Duration::from_millis(100);
/// Optimistic mode: how many times a conflicting transaction is rolled back and retried.
const CONFLICT_RETRIES_MAX: u32 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ParallelMode {
    #[default]
    Serial,
    Conservative,
    Optimistic,
}

/// How a connection applies: mode, total workers, and the most workers one domain may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParallelConfig {
    #[serde(default)]
    pub mode: ParallelMode,
    #[serde(default = "one")]
    pub workers: usize,
    #[serde(default = "one")]
    pub domain_workers_max: usize,
}

fn one() -> usize {
    1
}

impl Default for ParallelConfig {
    fn default() -> Self {
        ParallelConfig { mode: ParallelMode::Serial, workers: 1, domain_workers_max: 1 }
    }
}

impl ParallelConfig {
    pub fn is_parallel(&self) -> bool {
        self.mode != ParallelMode::Serial && self.workers > 1
    }
}

pub struct SqlSide {
    pub shared: Arc<Shared>,
    pub node: Arc<Node>,
    pub relay: RelayReader,
    pub ignore_duplicates: bool,
    pub delay_s: u64,
    /// START ... UNTIL: each listed domain stops at its GTID; unlisted domains are not applied at all.
    pub until: Option<GtidPosition>,
    pub parallel: ParallelConfig,
}

/// In-order commit within one domain: how many of its transactions (by index) entered the commit queue, and
/// how many committed.
#[derive(Default)]
struct DomainOrder {
    state: Mutex<DomainProgress>,
    moved: Condvar,
}

#[derive(Default)]
struct DomainProgress {
    entered: u64,
    committed: u64,
    in_flight: usize,
}

impl DomainOrder {
    /// Waits until `check` holds; false if the connection stops first.
    fn wait(&self, shared: &Shared, check: impl Fn(&DomainProgress) -> bool) -> bool {
        let mut state = self.state.lock();
        while !check(&state) {
            if shared.stopping() {
                return false;
            }
            self.moved.wait_for(&mut state, IDLE_WAIT);
        }
        true
    }

    fn update(&self, f: impl FnOnce(&mut DomainProgress)) {
        f(&mut self.state.lock());
        self.moved.notify_all();
    }
}

/// One transaction handed to a worker.
struct Job {
    txn: Transaction,
    /// Position of the transaction in its domain (0, 1, 2, …) since the connection started.
    index: u64,
    /// Conservative mode: the index it may start at once from (the first of its master commit group).
    group_start: u64,
    order: Arc<DomainOrder>,
}

/// Read from the relay log, waiting for a worker: per domain, in relay order.
#[derive(Default)]
struct Backlog {
    by_domain: BTreeMap<DomainId, VecDeque<Job>>,
    len: usize,
    /// Rotates which domain is served first.
    next_turn: usize,
}

impl Backlog {
    fn push(&mut self, domain: DomainId, job: Job) {
        self.by_domain.entry(domain).or_default().push_back(job);
        self.len += 1;
    }
}

/// Most transactions read ahead of the workers.
const BACKLOG_TXNS_MAX: usize = 10_000;

/// The worker pool's queue and counts.
#[derive(Default)]
struct Pool {
    queue: Mutex<PoolState>,
    changed: Condvar,
}

#[derive(Default)]
struct PoolState {
    jobs: VecDeque<Job>,
    in_flight: usize,
    closed: bool,
}

impl SqlSide {
    pub fn run(mut self) {
        if self.until_reached() {
            return self.finish_until();
        }
        self.set_state(SqlState::WaitingForRelay);
        let parallel = self.parallel.is_parallel();
        let pool = Arc::new(Pool::default());
        let workers: Vec<_> = if parallel {
            (0..self.parallel.workers)
                .map(|i| {
                    let (pool, shared, node) = (pool.clone(), self.shared.clone(), self.node.clone());
                    let (mode, ignore_duplicates) = (self.parallel.mode, self.ignore_duplicates);
                    std::thread::Builder::new()
                        .name(format!("apply-{}-{i}", self.shared.name))
                        .spawn(move || worker(pool, shared, node, mode, ignore_duplicates))
                        .expect("start an apply worker")
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut domains: BTreeMap<DomainId, (Arc<DomainOrder>, u64, u64, Option<u64>)> = BTreeMap::new();
        let mut backlog = Backlog::default();
        while !self.shared.stopping() {
            if self.shared.sql_paused() {
                self.set_state(SqlState::Paused);
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            if parallel {
                self.dispatch_ready(&pool, &mut backlog);
                if backlog.len >= BACKLOG_TXNS_MAX {
                    // Full: wait for a worker to finish (workers poke the relay condition).
                    self.shared.wait_briefly(IDLE_WAIT);
                    continue;
                }
            }
            let written = match self.shared.wait_for_relay(self.relay.position(), IDLE_WAIT) {
                Some(end) => end,
                None => continue,
            };
            let txn = match self.relay.next(written) {
                Ok(Some(txn)) => txn,
                Ok(None) => {
                    let idle = !parallel || (backlog.len == 0 && pool.queue.lock().in_flight == 0);
                    if idle {
                        self.set_state(SqlState::WaitingForRelay);
                        if parallel && self.until_reached() {
                            self.finish_until();
                            break;
                        }
                    }
                    continue;
                }
                Err(e) => {
                    self.set_state(SqlState::Error);
                    self.shared.fail("sql", "RELAY_CORRUPT", e.to_string());
                    break;
                }
            };
            if !self.wanted(&txn) {
                continue;
            }
            if !self.wait_for_delay(&txn) {
                break;
            }
            self.set_state(SqlState::Applying);
            if !parallel {
                let (gtid, ts) = (txn.gtid(), txn.header.commit_ts_us);
                let result = self.node.apply_replicated(txn.header, txn.changes, self.ignore_duplicates);
                if !record(&self.shared, result, gtid, ts) {
                    break;
                }
                if self.until_reached() {
                    self.finish_until();
                    break;
                }
                continue;
            }
            let domain = txn.gtid().domain;
            let entry = domains.entry(domain).or_insert_with(|| (Arc::new(DomainOrder::default()), 0, 0, None));
            let (order, next_index, group_start, last_commit_id) = entry;
            let index = *next_index;
            *next_index += 1;
            let joins_group =
                *last_commit_id == Some(txn.header.commit_id) && txn.header.flags & (flags::WAITED | flags::DDL) == 0;
            if !joins_group {
                *group_start = index;
            }
            *last_commit_id = Some(txn.header.commit_id);
            backlog.push(domain, Job { txn, index, group_start: *group_start, order: order.clone() });
        }
        {
            let mut q = pool.queue.lock();
            q.closed = true;
            pool.changed.notify_all();
        }
        for w in workers {
            let _ = w.join();
        }
        let mut status = self.shared.status.lock();
        // A worker's error may have been overwritten by the coordinator's own state since: the error wins.
        if status.last_error.as_ref().is_some_and(|e| e.side == "sql") {
            status.sql_state = SqlState::Error;
        } else if status.sql_state != SqlState::UntilReached {
            status.sql_state = SqlState::Stopped;
        }
    }

    /// Hands waiting jobs to the pool while workers are free, each domain within its worker limit, taking the
    /// domains in turn so that a busy one does not hold the others back.
    fn dispatch_ready(&self, pool: &Pool, backlog: &mut Backlog) {
        if backlog.len == 0 {
            return;
        }
        let domain_max = self.parallel.domain_workers_max.max(1);
        let mut dispatched = false;
        {
            let mut q = pool.queue.lock();
            let domains: Vec<DomainId> = backlog.by_domain.keys().copied().collect();
            let start = backlog.next_turn % domains.len().max(1);
            for &domain in domains.iter().cycle().skip(start).take(domains.len()) {
                let queue = backlog.by_domain.get_mut(&domain).expect("listed");
                while q.in_flight < self.parallel.workers {
                    let Some(job) = queue.front() else { break };
                    if job.order.state.lock().in_flight >= domain_max {
                        break;
                    }
                    let job = queue.pop_front().expect("front exists");
                    self.node.expect_commits(1);
                    job.order.update(|p| p.in_flight += 1);
                    q.in_flight += 1;
                    q.jobs.push_back(job);
                    backlog.len -= 1;
                    dispatched = true;
                }
            }
            backlog.next_turn = backlog.next_turn.wrapping_add(1);
        }
        backlog.by_domain.retain(|_, q| !q.is_empty());
        if dispatched {
            pool.changed.notify_all();
        }
    }

    fn set_state(&self, state: SqlState) {
        self.shared.status.lock().sql_state = state;
    }

    /// Under UNTIL, only listed domains up to their GTID are applied.
    fn wanted(&self, txn: &Transaction) -> bool {
        let Some(until) = &self.until else { return true };
        until.get(txn.gtid().domain).is_some_and(|stop| txn.gtid().seq <= stop.seq)
    }

    fn until_reached(&self) -> bool {
        let Some(until) = &self.until else { return false };
        self.node.position().is_ahead_of(until)
    }

    fn finish_until(&self) {
        tracing::info!(connection = %self.shared.name, until = ?self.until.as_ref().map(|u| u.to_string()), "replication reached its UNTIL position");
        self.set_state(SqlState::UntilReached);
        self.shared.stopped_by_itself();
    }

    /// Waits until the transaction is `delay_s` old; false if the connection was stopped meanwhile.
    fn wait_for_delay(&self, txn: &Transaction) -> bool {
        if self.delay_s == 0 {
            return true;
        }
        let due_us = txn.header.commit_ts_us + self.delay_s * 1_000_000;
        while now_us() < due_us {
            if self.shared.stopping() {
                return false;
            }
            self.set_state(SqlState::Delaying);
            std::thread::sleep(IDLE_WAIT.min(Duration::from_micros(due_us - now_us())));
        }
        true
    }
}

/// Records an apply's outcome in the status; false when replication must stop.
fn record(
    shared: &Shared,
    result: Result<Option<ferry_core::commit::Committed>, TxnError>,
    gtid: ferry_core::Gtid,
    ts: u64,
) -> bool {
    match result {
        Ok(Some(_)) => {
            shared.status.lock().applied(gtid, ts);
            true
        }
        Ok(None) => {
            shared.status.lock().duplicates_skipped += 1;
            true
        }
        Err(e) => {
            if shared.stopping() {
                return false;
            }
            shared.status.lock().sql_state = SqlState::Error;
            let code = match &e {
                TxnError::Strict(_) => "STRICT_MODE",
                TxnError::TwoMasters(_) => "TWO_MASTERS",
                TxnError::RowMismatch { .. } => "ROW_MISMATCH",
                _ => "APPLY_FAILED",
            };
            shared.fail("sql", code, format!("applying {gtid}: {e}"));
            false
        }
    }
}

/// A parallel apply worker: takes jobs in relay order and applies each in its domain's commit order.
fn worker(pool: Arc<Pool>, shared: Arc<Shared>, node: Arc<Node>, mode: ParallelMode, ignore_duplicates: bool) {
    loop {
        let job = {
            let mut q = pool.queue.lock();
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                if q.closed {
                    return;
                }
                pool.changed.wait_for(&mut q, IDLE_WAIT);
            }
        };
        apply_job(&shared, &node, mode, ignore_duplicates, &job);
        job.order.update(|p| p.in_flight -= 1);
        pool.queue.lock().in_flight -= 1;
        pool.changed.notify_all();
        // The coordinator waits on the relay condition: a free worker is news for it too.
        shared.poke();
    }
}

fn apply_job(shared: &Shared, node: &Node, mode: ParallelMode, ignore_duplicates: bool, job: &Job) {
    let (index, order) = (job.index, &job.order);
    let all_before_committed = |p: &DomainProgress| p.committed >= index;
    match mode {
        ParallelMode::Conservative => {
            // Starts with its master commit group: everything before the group must be committed.
            if !order.wait(shared, |p| p.committed >= job.group_start) {
                node.expected_commit_done();
                return;
            }
        }
        ParallelMode::Optimistic => {
            // Speculate: check the before images now; a conflict with a predecessor still in flight is rolled
            // back (nothing was done yet) and retried once the predecessors have committed.
            let mut attempts = 0;
            let full = job.txn.header.flags & flags::BEFORE_IMAGES != 0;
            while let Err(TxnError::RowMismatch { .. }) = node.check_before_images(&job.txn.changes, full) {
                if order.state.lock().committed >= index || attempts >= CONFLICT_RETRIES_MAX {
                    break; // Not a conflict with a predecessor: the apply below reports the mismatch.
                }
                attempts += 1;
                {
                    let mut status = shared.status.lock();
                    status.conflicts += u64::from(attempts == 1);
                    status.retries += 1;
                }
                if !order.wait(shared, all_before_committed) {
                    node.expected_commit_done();
                    return;
                }
            }
        }
        ParallelMode::Serial => {}
    }
    let announced = std::cell::Cell::new(true);
    let done_waiting = || {
        if announced.replace(false) {
            node.expected_commit_done();
        }
    };
    let mut wait = || order.wait(shared, |p| p.entered >= index);
    let mut entered = || {
        order.update(|p| p.entered = p.entered.max(index + 1));
        done_waiting();
    };
    let mut turn = ReplicaTurn::Ordered { wait: &mut wait, entered: &mut entered };
    let (gtid, ts) = (job.txn.gtid(), job.txn.header.commit_ts_us);
    let result = node.apply_replicated_in_turn(job.txn.header, job.txn.changes.clone(), ignore_duplicates, &mut turn);
    done_waiting();
    if record(shared, result, gtid, ts) {
        order.update(|p| p.committed = p.committed.max(index + 1));
    }
}

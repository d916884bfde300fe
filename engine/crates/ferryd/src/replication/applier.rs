//! The SQL side of a replication connection: reads the relay log and applies its transactions through the
//! node (original GTID and origin commit time kept, logged in this node's binlog, gtid_slave_pos updated in the
//! same atomic store state), honouring START ... UNTIL and the connection's delay.
//!
//! Applying a row-image transaction costs almost nothing here; what costs is its commit (an fsync). So the SQL
//! side applies in **batches committed as one group**: `workers` is how many transactions may be in flight at
//! once (one commit group), `domain_workers_max` how many of them one domain may have. A batch takes the domains'
//! read-ahead queues in turn, so it is **in order within a domain** (a domain's transactions keep the master's
//! order, and commit order is queue order) and **out of order across domains** (each server interleaves the
//! domains its own way). `serial` applies one at a time; `conservative` puts two transactions of one domain in a
//! batch only when the master committed them in the same group (same commit id, no row-lock wait, not DDL);
//! `optimistic` puts any, checking each one's before images against the rows as its predecessors in the batch
//! leave them: a conflict found then (it needs a predecessor's commit to be visible first) holds it back — its
//! "roll back" costs nothing, as nothing was done — and it is retried in the next batch, once they committed.
//!
//! The SQL side is a loop around [`SqlSide::step`], one round that never waits: read ahead, plan, commit. The
//! plan is [`plan_batch`], a function of the read-ahead queues, the node's position, its checks
//! ([`ApplyChecks`]), the rules and one clock reading: tests give it each of these, and the replica simulation
//! (`super::sim`) drives the steps itself. The delay and every wait are on the node's [`Clock`].
//!
//! A corrupt relay event, a refused GTID (strict mode, two masters) or a diverged row (a before image that is
//! not the row here, with no predecessor in flight to explain it) stops the connection, naming the relay file
//! and offset, the GTIDs, or the row; nothing of a refused batch is applied, so no domain is left with a gap.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use ferry_core::binlog::event::flags;
use ferry_core::binlog::reader::Transaction;
use ferry_core::clock::Clock;
use ferry_core::gtid::{DomainId, Gtid, GtidPosition};
use ferry_core::node::{Node, TxnError};
use ferry_core::relay::RelayReader;
use ferry_core::row::{Row, RowChange};
use serde::{Deserialize, Serialize};

use super::filter::DomainFilter;
use super::shared::Shared;
use super::status::SqlState;
use super::until::Until;

/// How long the SQL side waits at most, idle or delayed, between looks at the stop flag.
const IDLE_WAIT: Duration = Duration::from_millis(100);
/// How often a paused SQL side looks whether it may apply.
const PAUSE_POLL: Duration = Duration::from_millis(5);
/// Most transactions read ahead of what is applied (their bytes are bounded by `--read-ahead-bytes-max`).
const READ_AHEAD_TXNS_MAX: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ParallelMode {
    #[default]
    Serial,
    Conservative,
    Optimistic,
}

/// How a connection applies: mode, transactions in flight at once, and how many of them one domain may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Transactions per batch, and per domain in a batch.
    fn limits(&self) -> (usize, usize) {
        match self.mode {
            ParallelMode::Serial => (1, 1),
            _ => (self.workers.max(1), self.domain_workers_max.clamp(1, self.workers.max(1))),
        }
    }
}

pub struct SqlSide {
    pub shared: Arc<Shared>,
    pub node: Arc<Node>,
    pub relay: RelayReader,
    pub ignore_duplicates: bool,
    pub delay_s: u64,
    /// START ... UNTIL: each listed domain stops before its first transaction past its GTID (holes included);
    /// unlisted domains are not applied at all.
    pub until: Option<Until>,
    pub parallel: ParallelConfig,
    /// `--read-ahead-bytes-max`: reading from the relay log stops when what is read and not applied reaches it.
    pub read_ahead_bytes_max: u64,
    /// DO_DOMAIN_IDS / IGNORE_DOMAIN_IDS: transactions of other domains are passed over.
    pub filter: DomainFilter,
    /// What is left of the skip counter: the next transactions read are passed over.
    pub skip_remaining: u64,
    /// What the delay is measured on, and what the SQL side waits on (the node's clock).
    pub clock: Arc<dyn Clock>,
}

/// The relay-log bytes of a transaction read ahead: what the read-ahead bound counts.
fn relay_bytes(txn: &Transaction) -> u64 {
    txn.end_offset.saturating_sub(txn.offset)
}

/// Transactions read from the relay log and not yet applied, per domain in relay order (each with its place
/// in the relay log, so serial apply keeps the relay's order across domains too).
#[derive(Default)]
pub(crate) struct ReadAhead {
    by_domain: BTreeMap<DomainId, VecDeque<(u64, Transaction)>>,
    len: usize,
    /// Their relay-log bytes.
    bytes: u64,
    /// Places handed out so far.
    read: u64,
    /// Rotates which domain a batch starts with.
    next_turn: usize,
    /// A relay-log read error, reported once everything read before it is applied.
    error: Option<ferry_core::binlog::BinlogError>,
}

impl ReadAhead {
    /// Queues a transaction read from the relay log behind the others of its domain.
    pub(crate) fn push(&mut self, txn: Transaction) {
        self.read += 1;
        self.bytes += relay_bytes(&txn);
        self.by_domain.entry(txn.gtid().domain).or_default().push_back((self.read, txn));
        self.len += 1;
    }

    /// Takes what `plan` says from the fronts of the domains' queues: the batch, in the plan's order (the
    /// duplicates it names are dropped). The next plan starts with the next domain.
    pub(crate) fn take(&mut self, plan: &BatchPlan) -> Vec<Transaction> {
        self.next_turn = self.next_turn.wrapping_add(1);
        let mut batch = Vec::with_capacity(plan.steps.len());
        for (domain, take) in &plan.steps {
            let queue = self.by_domain.get_mut(domain).expect("planned from these queues");
            let (_, txn) = queue.pop_front().expect("planned from these queues");
            self.len -= 1;
            self.bytes -= relay_bytes(&txn);
            if *take == Take::Apply {
                batch.push(txn);
            }
        }
        self.by_domain.retain(|_, q| !q.is_empty());
        batch
    }

    /// Whether a transaction of `domain` waits to be applied.
    fn pending(&self, domain: DomainId) -> bool {
        self.by_domain.get(&domain).is_some_and(|q| !q.is_empty())
    }
}

/// What the batch planner asks of the node: strict mode's verdict on a GTID, and whether before images match
/// the rows (as the store holds them, or as `pending` transactions ahead in the batch leave them).
pub(crate) trait ApplyChecks {
    fn check_gtid(&self, gtid: Gtid) -> Result<(), TxnError>;
    fn check_before_images(
        &self,
        changes: &[RowChange],
        full_images: bool,
        pending: &HashMap<(String, String), Option<Row>>,
    ) -> Result<(), TxnError>;
}

impl ApplyChecks for Node {
    fn check_gtid(&self, gtid: Gtid) -> Result<(), TxnError> {
        self.check_replicated_gtid(gtid)
    }

    fn check_before_images(
        &self,
        changes: &[RowChange],
        full_images: bool,
        pending: &HashMap<(String, String), Option<Row>>,
    ) -> Result<(), TxnError> {
        Node::check_before_images(self, changes, full_images, pending)
    }
}

/// The settings a batch is planned under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchRules {
    pub parallel: ParallelConfig,
    /// Drop a transaction whose GTID is not above its domain's position instead of applying it.
    pub ignore_duplicates: bool,
    /// A transaction is due this many seconds after its commit on the master.
    pub delay_s: u64,
}

/// What the planner does with the transaction at the front of a domain's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    /// Into the batch.
    Apply,
    /// Dropped: a duplicate (ignore_duplicates).
    Duplicate,
}

/// The next batch, as [`plan_batch`] decides it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct BatchPlan {
    /// Transactions taken from the fronts of their domains' queues, in order; those marked [`Take::Apply`],
    /// in this order, are the batch (a domain's keep their relay order).
    pub steps: Vec<(DomainId, Take)>,
    /// Transactions held back because a predecessor in the batch must commit first (retried next batch).
    pub conflicts: u64,
    /// A delayed replica held a transaction back: the earliest wall time (µs) one of them is due.
    pub due_at_us: Option<u64>,
}

impl BatchPlan {
    /// Transactions the batch applies.
    pub fn applied(&self) -> usize {
        self.steps.iter().filter(|(_, t)| *t == Take::Apply).count()
    }

    /// Duplicates dropped.
    pub fn duplicates(&self) -> usize {
        self.steps.len() - self.applied()
    }
}

/// Why a batch could not be built.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub code: &'static str,
    pub gtid: Gtid,
    pub error: TxnError,
}

/// Plans the next batch from what is read ahead: the domains in turn (starting with the `ahead`'s turn), each
/// within its limits, every member checked (GTID, duplicates, before images over its predecessors in the batch),
/// and, on a delayed replica, only what is due at `now_us`. A conflicting transaction waits for the next batch;
/// one that must not be applied at all refuses the whole batch. No I/O but what `checks` does, no clock but
/// `now_us`: the same inputs give the same plan.
pub(crate) fn plan_batch(
    ahead: &ReadAhead,
    position: &GtidPosition,
    checks: &dyn ApplyChecks,
    rules: BatchRules,
    now_us: u64,
) -> Result<BatchPlan, Refusal> {
    let (batch_max, domain_max) = rules.parallel.limits();
    let mut plan = BatchPlan::default();
    let mut batch_len = 0usize;
    let mut pending_rows: HashMap<(String, String), Option<Row>> = HashMap::new();
    let domains: Vec<DomainId> = if rules.parallel.mode == ParallelMode::Serial {
        // Serial: the relay log's own order, across domains too.
        ahead
            .by_domain
            .iter()
            .min_by_key(|(_, q)| q.front().map(|(place, _)| *place))
            .map(|(d, _)| *d)
            .into_iter()
            .collect()
    } else {
        ahead.by_domain.keys().copied().collect()
    };
    let start = ahead.next_turn % domains.len().max(1);
    for &domain in domains.iter().cycle().skip(start).take(domains.len()) {
        let mut taken = 0usize;
        let mut last: Option<(Gtid, u64)> = None;
        for (_, txn) in &ahead.by_domain[&domain] {
            if batch_len >= batch_max || taken >= domain_max {
                break;
            }
            let gtid = txn.gtid();
            let have = last.map(|(g, _)| g).or_else(|| position.get(domain));
            if rules.ignore_duplicates && have.is_some_and(|h| h.seq >= gtid.seq) {
                plan.steps.push((domain, Take::Duplicate));
                continue;
            }
            if let Some((prev, commit_id)) = last {
                if prev.seq >= gtid.seq {
                    let violation = ferry_core::gtid_alloc::StrictModeViolation { domain, offered: gtid, have: prev };
                    return Err(Refusal { code: "STRICT_MODE", gtid, error: TxnError::Strict(violation) });
                }
                let same_group =
                    commit_id == txn.header.commit_id && txn.header.flags & (flags::WAITED | flags::DDL) == 0;
                if rules.parallel.mode == ParallelMode::Conservative && !same_group {
                    break;
                }
            } else if let Err(error) = checks.check_gtid(gtid) {
                let code = if matches!(error, TxnError::TwoMasters(_)) { "TWO_MASTERS" } else { "STRICT_MODE" };
                return Err(Refusal { code, gtid, error });
            }
            let full = txn.header.flags & flags::BEFORE_IMAGES != 0;
            match checks.check_before_images(&txn.changes, full, &pending_rows) {
                Ok(()) => {}
                Err(TxnError::RowMismatch { .. }) if taken > 0 => {
                    // A predecessor in this batch has to commit first: retried in the next batch.
                    plan.conflicts += 1;
                    break;
                }
                Err(error @ TxnError::RowMismatch { .. }) => return Err(Refusal { code: "ROW_MISMATCH", gtid, error }),
                Err(error) => return Err(Refusal { code: "APPLY_FAILED", gtid, error }),
            }
            let due_at_us = txn.header.commit_ts_us.saturating_add(rules.delay_s.saturating_mul(1_000_000));
            if rules.delay_s > 0 && now_us < due_at_us {
                // Delayed replica: nothing later in the domain is due either.
                plan.due_at_us = Some(plan.due_at_us.map_or(due_at_us, |d| d.min(due_at_us)));
                break;
            }
            for c in &txn.changes {
                pending_rows.insert((c.table.clone(), c.key.clone()), c.after.clone());
            }
            last = Some((gtid, txn.header.commit_id));
            taken += 1;
            batch_len += 1;
            plan.steps.push((domain, Take::Apply));
        }
    }
    Ok(plan)
}

/// What one [`SqlSide::step`] did, and so what the SQL side waits for before the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Committed a batch of this many transactions.
    Applied(usize),
    /// Took something without applying it (duplicates dropped): step again.
    Again,
    /// Everything read is applied: wait for the relay log to grow.
    Idle,
    /// A delayed replica waits until this wall time (µs) for its next transaction.
    Delayed { due_at_us: u64 },
    /// Started with `sql_paused`: wait for `resume-sql`.
    Paused,
    /// The SQL side is done: stopped, UNTIL reached, or stopped by an error.
    Ended,
}

impl SqlSide {
    pub fn run(mut self) {
        let mut ahead = ReadAhead::default();
        if !self.begin(&ahead) {
            return;
        }
        loop {
            match self.step(&mut ahead) {
                Step::Ended => return,
                Step::Applied(_) | Step::Again => {}
                Step::Idle => {
                    self.shared.wait_for_relay(self.relay.position(), IDLE_WAIT);
                }
                Step::Delayed { due_at_us } => {
                    let until_due = Duration::from_micros(due_at_us.saturating_sub(self.clock.now_us()));
                    self.clock.sleep(until_due.min(IDLE_WAIT));
                }
                Step::Paused => self.clock.sleep(PAUSE_POLL),
            }
        }
    }

    /// Before the first step: false when the connection's UNTIL is reached already (nothing to apply).
    pub(crate) fn begin(&self, ahead: &ReadAhead) -> bool {
        if self.until_reached(ahead) {
            self.finish_until();
            return false;
        }
        self.set_state(SqlState::WaitingForRelay);
        true
    }

    /// One round of the SQL side, never waiting: reads ahead what the relay log holds, plans a batch, commits
    /// it. What it returns says what to wait for before the next round.
    pub(crate) fn step(&mut self, ahead: &mut ReadAhead) -> Step {
        if self.shared.stopping() {
            let mut status = self.shared.status.lock();
            if status.sql_state != SqlState::Error && status.sql_state != SqlState::UntilReached {
                status.sql_state = SqlState::Stopped;
            }
            return Step::Ended;
        }
        if let Some(parallel) = self.shared.take_parallel_change() {
            // Between two batches: nothing is in flight, the next batch is planned with the new limits.
            tracing::info!(connection = %self.shared.name, ?parallel, "parallel apply changed");
            self.parallel = parallel;
        }
        if self.shared.sql_paused() {
            self.set_state(SqlState::Paused);
            return Step::Paused;
        }
        if let Err(e) = self.read_ahead(ahead) {
            self.shared.fail("sql", "SKIP_FAILED", format!("recording passed-over transactions: {e}"));
            return Step::Ended;
        }
        if ahead.len == 0 {
            if let Some(e) = ahead.error.take() {
                self.shared.fail("sql", "RELAY_CORRUPT", e.to_string());
                return Step::Ended;
            }
            if self.until_reached(ahead) {
                self.finish_until();
                return Step::Ended;
            }
            self.set_state(SqlState::WaitingForRelay);
            return Step::Idle;
        }
        let rules =
            BatchRules { parallel: self.parallel, ignore_duplicates: self.ignore_duplicates, delay_s: self.delay_s };
        let plan = match plan_batch(ahead, &self.node.position(), &*self.node, rules, self.clock.now_us()) {
            Ok(plan) => plan,
            Err(Refusal { code, gtid, error }) => {
                self.shared.fail("sql", code, format!("applying {gtid}: {error}"));
                return Step::Ended;
            }
        };
        if plan.conflicts > 0 || plan.duplicates() > 0 {
            let mut status = self.shared.status.lock();
            status.conflicts += plan.conflicts;
            status.retries += plan.conflicts;
            status.duplicates_skipped += plan.duplicates() as u64;
        }
        let batch = ahead.take(&plan);
        self.note_read_ahead(ahead.bytes);
        if batch.is_empty() {
            return match plan.due_at_us {
                Some(due_at_us) => {
                    self.set_state(SqlState::Delaying);
                    Step::Delayed { due_at_us }
                }
                None => Step::Again,
            };
        }
        let applied = batch.len();
        if !self.commit(batch) {
            return Step::Ended;
        }
        if self.until_reached(ahead) {
            self.finish_until();
            return Step::Ended;
        }
        Step::Applied(applied)
    }

    /// Reads what the relay log holds (up to the read-ahead bound) into the domains' queues; a read error stops
    /// the reading and waits in `ahead.error` until what came before it is applied. Transactions the domain
    /// filters or the skip counter pass over are not queued: their GTIDs go to gtid_slave_pos at once (nothing
    /// of their domain is queued before them: a filtered domain has nothing queued, and the skip counter takes
    /// the first transactions read).
    fn read_ahead(&mut self, ahead: &mut ReadAhead) -> Result<(), ferry_core::node::NodeError> {
        let before = ahead.bytes;
        let mut passed: Vec<(Gtid, u64, bool)> = Vec::new();
        while ahead.len < READ_AHEAD_TXNS_MAX && ahead.bytes < self.read_ahead_bytes_max && ahead.error.is_none() {
            let Some(written) = self.shared.relay_end() else { break };
            let txn = match self.relay.next(written) {
                Ok(Some(txn)) => txn,
                Ok(None) => break,
                Err(e) => {
                    ahead.error = Some(e);
                    break;
                }
            };
            if !self.wanted(&txn) {
                continue;
            }
            let gtid = txn.gtid();
            if !self.filter.admits(gtid.domain) {
                passed.push((gtid, txn.header.commit_ts_us, true));
                continue;
            }
            if self.skip_remaining > 0 {
                self.skip_remaining -= 1;
                passed.push((gtid, txn.header.commit_ts_us, false));
                continue;
            }
            ahead.push(txn);
        }
        if ahead.bytes != before {
            self.note_read_ahead(ahead.bytes);
        }
        if passed.is_empty() {
            return Ok(());
        }
        let gtids: Vec<Gtid> = passed.iter().map(|(g, _, _)| *g).collect();
        self.node.skip_replicated(&gtids)?;
        let mut status = self.shared.status.lock();
        for (gtid, ts, filtered) in passed {
            status.passed_over(gtid, ts);
            if filtered {
                status.transactions_filtered += 1;
            } else {
                status.transactions_skipped += 1;
                tracing::info!(connection = %self.shared.name, %gtid, "skip counter: transaction passed over");
            }
        }
        status.skip_counter = self.skip_remaining;
        Ok(())
    }

    fn note_read_ahead(&self, bytes: u64) {
        let mut status = self.shared.status.lock();
        status.read_ahead_bytes = bytes;
        status.read_ahead_bytes_peak = status.read_ahead_bytes_peak.max(bytes);
    }

    /// Commits a batch as one group; false when replication must stop.
    fn commit(&self, batch: Vec<Transaction>) -> bool {
        self.set_state(SqlState::Applying);
        let meta: Vec<(Gtid, u64)> = batch.iter().map(|t| (t.gtid(), t.header.commit_ts_us)).collect();
        let results = self.node.commit_replicated_batch(batch.into_iter().map(|t| (t.header, t.changes)).collect());
        for ((gtid, ts), result) in meta.into_iter().zip(results) {
            match result {
                Ok(_) => self.shared.status.lock().applied(gtid, ts),
                Err(e) => {
                    let code = match &e {
                        TxnError::Strict(_) => "STRICT_MODE",
                        TxnError::TwoMasters(_) => "TWO_MASTERS",
                        TxnError::RowMismatch { .. } => "ROW_MISMATCH",
                        _ => "APPLY_FAILED",
                    };
                    self.shared.fail("sql", code, format!("applying {gtid}: {e}"));
                    return false;
                }
            }
        }
        true
    }

    fn set_state(&self, state: SqlState) {
        self.shared.status.lock().sql_state = state;
    }

    /// Under UNTIL, only listed domains up to their GTID are applied.
    fn wanted(&mut self, txn: &Transaction) -> bool {
        self.until.as_mut().is_none_or(|until| until.admits(txn.gtid()))
    }

    /// Whether every listed domain has reached or passed its UNTIL GTID (see [`Until::reached`]).
    fn until_reached(&self, ahead: &ReadAhead) -> bool {
        let Some(until) = &self.until else { return false };
        until.reached(&self.node.position(), |domain| ahead.pending(domain))
    }

    fn finish_until(&self) {
        tracing::info!(connection = %self.shared.name, until = ?self.until.as_ref().map(|u| u.position().to_string()), "replication reached its UNTIL position");
        self.set_state(SqlState::UntilReached);
        self.shared.stopped_by_itself();
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use ferry_core::binlog::event::{encode_event, Event, GtidEvent};
    use ferry_core::clock::ManualClock;
    use ferry_core::gtid_alloc::StrictModeViolation;
    use ferry_core::node::NodeConfig;
    use ferry_core::relay::RelayWriter;
    use ferry_core::row::Value;
    use ferry_core::vfs::sim::SimFs;

    use super::*;
    use crate::replication::status::ConnectionStatus;

    type Rows = HashMap<(String, String), Option<Row>>;

    /// A node as the planner sees it: strict mode refuses a GTID not above `have` in its domain, and the store
    /// holds `rows`.
    #[derive(Default)]
    struct Checks {
        have: GtidPosition,
        rows: Rows,
    }

    impl ApplyChecks for Checks {
        fn check_gtid(&self, gtid: Gtid) -> Result<(), TxnError> {
            match self.have.get(gtid.domain) {
                Some(have) if have.seq >= gtid.seq => {
                    Err(TxnError::Strict(StrictModeViolation { domain: gtid.domain, offered: gtid, have }))
                }
                _ => Ok(()),
            }
        }

        fn check_before_images(&self, changes: &[RowChange], _full: bool, pending: &Rows) -> Result<(), TxnError> {
            for c in changes {
                let slot = (c.table.clone(), c.key.clone());
                let row = pending.get(&slot).or_else(|| self.rows.get(&slot)).cloned().flatten();
                if c.before != row {
                    return Err(TxnError::RowMismatch { table: c.table.clone(), key: c.key.clone() });
                }
            }
            Ok(())
        }
    }

    fn row(v: i64) -> Row {
        Row::from([("v".to_string(), Value::Int(v))])
    }

    /// A change of row `key` of table `t` from `before` to `after` (None: absent).
    fn change(key: &str, before: Option<i64>, after: Option<i64>) -> RowChange {
        RowChange { table: "t".into(), key: key.into(), before: before.map(row), after: after.map(row) }
    }

    /// Transactions, as relay-log reads give them, each with the key it changes (new rows unless said).
    struct Relay {
        ahead: ReadAhead,
    }

    impl Relay {
        fn new() -> Self {
            Relay { ahead: ReadAhead::default() }
        }

        /// Queues `domain-1-seq` of commit group `commit_id`, committed at `commit_ts_us`, with `changes`.
        fn push(
            &mut self,
            gtid: (u32, u64),
            commit_id: u64,
            txn_flags: u8,
            commit_ts_us: u64,
            changes: Vec<RowChange>,
        ) {
            let at = self.ahead.read * 100;
            self.ahead.push(Transaction {
                file: "relay.000001".into(),
                offset: at,
                end_offset: at + 100,
                header: GtidEvent {
                    gtid: Gtid::new(gtid.0, 1, gtid.1),
                    commit_id,
                    flags: txn_flags | flags::BEFORE_IMAGES,
                    commit_ts_us,
                },
                changes,
            });
        }

        /// A transaction of its own row (`d{domain}s{seq}`), alone in its commit group.
        fn own(&mut self, domain: u32, seq: u64) {
            let key = format!("d{domain}s{seq}");
            self.push((domain, seq), domain as u64 * 1000 + seq, 0, 0, vec![change(&key, None, Some(1))]);
        }
    }

    fn rules(mode: ParallelMode, workers: usize, domain_workers_max: usize) -> BatchRules {
        BatchRules {
            parallel: ParallelConfig { mode, workers, domain_workers_max },
            ignore_duplicates: false,
            delay_s: 0,
        }
    }

    /// The batch a plan makes, as GTID texts, taking it from the queues.
    fn take(relay: &mut Relay, plan: &BatchPlan) -> Vec<String> {
        relay.ahead.take(plan).iter().map(|t| t.gtid().to_string()).collect()
    }

    fn plan(relay: &Relay, checks: &Checks, rules: BatchRules, now_us: u64) -> BatchPlan {
        plan_batch(&relay.ahead, &checks.have, checks, rules, now_us).unwrap()
    }

    #[test]
    fn serial_applies_one_transaction_at_a_time_in_relay_order_across_domains() {
        let mut relay = Relay::new();
        relay.own(1, 1);
        relay.own(0, 1);
        relay.own(1, 2);
        let checks = Checks::default();
        let mut order = Vec::new();
        while relay.ahead.len > 0 {
            let p = plan(&relay, &checks, rules(ParallelMode::Serial, 8, 8), 0);
            assert_eq!(p.applied(), 1, "serial ignores workers");
            order.extend(take(&mut relay, &p));
        }
        assert_eq!(order, ["1-1-1", "0-1-1", "1-1-2"]);
        assert_eq!((relay.ahead.len, relay.ahead.bytes), (0, 0));
    }

    #[test]
    fn conservative_batches_a_domain_only_within_one_master_commit_group_without_waits_or_ddl() {
        let mut relay = Relay::new();
        relay.push((0, 1), 7, 0, 0, vec![change("a", None, Some(1))]);
        relay.push((0, 2), 7, 0, 0, vec![change("b", None, Some(1))]);
        relay.push((0, 3), 7, flags::WAITED, 0, vec![change("c", None, Some(1))]);
        relay.push((0, 4), 8, 0, 0, vec![change("d", None, Some(1))]);
        relay.push((0, 5), 8, flags::DDL, 0, vec![change("e", None, Some(1))]);
        let (checks, rules) = (Checks::default(), rules(ParallelMode::Conservative, 8, 8));
        let mut batches = Vec::new();
        while relay.ahead.len > 0 {
            let p = plan(&relay, &checks, rules, 0);
            batches.push(take(&mut relay, &p));
        }
        assert_eq!(batches, [vec!["0-1-1", "0-1-2"], vec!["0-1-3"], vec!["0-1-4"], vec!["0-1-5"]]);
    }

    #[test]
    fn optimistic_fills_the_batch_within_both_limits_keeping_each_domains_order_and_rotating_domains() {
        let mut relay = Relay::new();
        for seq in 1..=3 {
            relay.own(0, seq);
            relay.own(1, seq);
            relay.own(2, seq);
        }
        let checks = Checks::default();
        let p = plan(&relay, &checks, rules(ParallelMode::Optimistic, 5, 2), 0);
        assert_eq!(take(&mut relay, &p), ["0-1-1", "0-1-2", "1-1-1", "1-1-2", "2-1-1"]);
        // The next batch starts with the next domain.
        let p = plan(&relay, &checks, rules(ParallelMode::Optimistic, 5, 2), 0);
        assert_eq!(take(&mut relay, &p), ["1-1-3", "2-1-2", "2-1-3", "0-1-3"]);
    }

    /// Optimistic: a transaction whose before image is not the row as its predecessors in the batch leave it
    /// waits for them to commit (the next batch); the first of a domain that does not match has no excuse.
    #[test]
    fn a_conflict_with_a_predecessor_waits_for_the_next_batch_and_a_diverged_row_refuses() {
        let mut relay = Relay::new();
        relay.push((0, 1), 1, 0, 0, vec![change("k", None, Some(1))]);
        // Before image 5: not what 0-1-1 leaves (1), so it waits — and stays refused once 0-1-1 is in the store.
        relay.push((0, 2), 1, 0, 0, vec![change("k", Some(5), Some(6))]);
        let mut checks = Checks::default();
        let p = plan(&relay, &checks, rules(ParallelMode::Optimistic, 8, 8), 0);
        assert_eq!(p.conflicts, 1);
        assert_eq!(take(&mut relay, &p), ["0-1-1"]);
        checks.rows.insert(("t".into(), "k".into()), Some(row(1)));
        checks.have.set(Gtid::new(0, 1, 1));
        let refusal = plan_batch(&relay.ahead, &checks.have, &checks, rules(ParallelMode::Optimistic, 8, 8), 0);
        let refusal = refusal.expect_err("a row the master never saw");
        assert_eq!((refusal.code, refusal.gtid.to_string().as_str()), ("ROW_MISMATCH", "0-1-2"));
        // A predecessor's after image in the batch is what the next one's before image is checked against.
        let mut relay = Relay::new();
        relay.push((0, 1), 1, 0, 0, vec![change("k", None, Some(1))]);
        relay.push((0, 2), 1, 0, 0, vec![change("k", Some(1), Some(2))]);
        let p = plan(&relay, &Checks::default(), rules(ParallelMode::Optimistic, 8, 8), 0);
        assert_eq!((p.applied(), p.conflicts), (2, 0));
    }

    #[test]
    fn strict_mode_refuses_the_batch_and_ignore_duplicates_drops_what_the_position_holds() {
        let mut relay = Relay::new();
        relay.own(0, 3);
        relay.own(0, 4);
        let mut checks = Checks::default();
        checks.have.set(Gtid::new(0, 1, 3));
        let refused = plan_batch(&relay.ahead, &checks.have, &checks, rules(ParallelMode::Optimistic, 8, 8), 0);
        let refused = refused.expect_err("0-1-3 is not above 0-1-3");
        assert_eq!((refused.code, refused.gtid), ("STRICT_MODE", Gtid::new(0, 1, 3)));
        let rules = BatchRules { ignore_duplicates: true, ..rules(ParallelMode::Optimistic, 8, 8) };
        let p = plan(&relay, &checks, rules, 0);
        assert_eq!(p.steps, [(0, Take::Duplicate), (0, Take::Apply)]);
        assert_eq!((p.duplicates(), p.applied()), (1, 1));
        assert_eq!(take(&mut relay, &p), ["0-1-4"], "the duplicate is dropped, not applied");
        assert_eq!(relay.ahead.len, 0);
        // Within a domain's run, seq_nos must go up.
        let mut relay = Relay::new();
        relay.own(0, 5);
        relay.own(0, 4);
        let refused =
            plan_batch(&relay.ahead, &GtidPosition::new(), &Checks::default(), rules_optimistic(), 0).unwrap_err();
        assert_eq!((refused.code, refused.gtid), ("STRICT_MODE", Gtid::new(0, 1, 4)));
    }

    fn rules_optimistic() -> BatchRules {
        rules(ParallelMode::Optimistic, 8, 8)
    }

    /// MASTER_DELAY: a transaction is due `delay_s` after its commit on the master, by the clock reading the
    /// plan is given; a domain waits at its first transaction not due, the others go on.
    #[test]
    fn a_delayed_transaction_is_planned_only_from_its_due_time_and_holds_back_only_its_domain() {
        let mut relay = Relay::new();
        relay.push((0, 1), 1, 0, 1_000_000, vec![change("a", None, Some(1))]);
        relay.push((0, 2), 1, 0, 3_000_000, vec![change("b", None, Some(1))]);
        relay.push((1, 1), 2, 0, 2_000_000, vec![change("c", None, Some(1))]);
        let rules = BatchRules { delay_s: 10, ..rules_optimistic() };
        let checks = Checks::default();
        let p = plan(&relay, &checks, rules, 10_999_999);
        assert_eq!((p.applied(), p.due_at_us), (0, Some(11_000_000)), "nothing due a microsecond early");
        let p = plan(&relay, &checks, rules, 11_000_000);
        assert_eq!(p.due_at_us, Some(12_000_000), "domain 1's is next");
        assert_eq!(take(&mut relay, &p), ["0-1-1"], "0-1-2 waits behind it");
        let p = plan(&relay, &checks, rules, 12_500_000);
        assert_eq!((take(&mut relay, &p), p.due_at_us), (vec!["1-1-1".to_string()], Some(13_000_000)));
        let p = plan(&relay, &checks, rules, 13_000_000);
        assert_eq!((take(&mut relay, &p), p.due_at_us), (vec!["0-1-2".to_string()], None));
        // Without a delay the commit time does not matter.
        let mut relay = Relay::new();
        relay.push((0, 1), 1, 0, u64::MAX, vec![change("a", None, Some(1))]);
        assert_eq!(plan(&relay, &checks, rules_optimistic(), 0).applied(), 1);
    }

    /// The same inputs give the same plan: the planner reads no clock and keeps no state of its own.
    #[test]
    fn planning_is_a_function_of_its_inputs() {
        let mut relay = Relay::new();
        for seq in 1..=4 {
            relay.own(seq as u32 % 2, seq);
        }
        let checks = Checks::default();
        let rules = BatchRules { delay_s: 1, ..rules(ParallelMode::Optimistic, 3, 2) };
        let first = plan(&relay, &checks, rules, 5_000_000);
        assert_eq!(plan(&relay, &checks, rules, 5_000_000), first);
        assert_eq!(first.applied(), 3);
    }

    /// The SQL side over a node, its relay log and a manual clock: a delayed transaction stays unapplied,
    /// the state `delaying`, until the clock reaches its due time — no real waiting.
    #[test]
    fn the_sql_side_applies_a_delayed_transaction_when_the_clock_reaches_its_due_time() {
        let disk = SimFs::new();
        let clock = ManualClock::new(50_000_000);
        let mut config = NodeConfig::new(2, "/replica");
        config.fs = Arc::new(disk.clone());
        config.clock = clock.handle();
        let node = Node::open(config, None).unwrap();
        let mut relay = RelayWriter::create_on(Arc::new(disk.clone()), Path::new("/replica/relay/a"), 1 << 20).unwrap();
        let shared = Arc::new(Shared::new("a", ConnectionStatus::default(), std::sync::Weak::new()));
        let mut sql = SqlSide {
            shared: shared.clone(),
            node: node.clone(),
            relay: relay.reader().unwrap(),
            ignore_duplicates: false,
            delay_s: 30,
            until: None,
            parallel: ParallelConfig::default(),
            read_ahead_bytes_max: 1 << 20,
            filter: DomainFilter::default(),
            skip_remaining: 0,
            clock: clock.handle(),
        };
        let mut ahead = ReadAhead::default();
        assert!(sql.begin(&ahead));
        assert_eq!(sql.step(&mut ahead), Step::Idle);
        // Committed on the master at 40 s: due at 70 s.
        let mut events = Vec::new();
        let header = GtidEvent { gtid: Gtid::new(0, 1, 1), commit_id: 1, flags: 0, commit_ts_us: 40_000_000 };
        encode_event(&Event::Gtid(header), &mut events);
        encode_event(&Event::Rows { changes: vec![change("k", None, Some(1))] }, &mut events);
        encode_event(&Event::Commit { changes: 1 }, &mut events);
        shared.relay_written(relay.append(&events).unwrap());
        assert_eq!(sql.step(&mut ahead), Step::Delayed { due_at_us: 70_000_000 });
        assert_eq!(shared.status.lock().sql_state, SqlState::Delaying);
        clock.advance(Duration::from_micros(19_999_999));
        assert_eq!(sql.step(&mut ahead), Step::Delayed { due_at_us: 70_000_000 });
        assert_eq!(node.slave_position(), GtidPosition::new(), "not applied a microsecond early");
        clock.advance(Duration::from_micros(1));
        assert_eq!(sql.step(&mut ahead), Step::Applied(1));
        assert_eq!(node.slave_position().to_string(), "0-1-1");
        assert_eq!(node.read_row("t", "k").unwrap(), Some(row(1)));
        assert_eq!(sql.step(&mut ahead), Step::Idle);
        shared.request_stop();
        assert_eq!(sql.step(&mut ahead), Step::Ended);
        assert_eq!(shared.status.lock().sql_state, SqlState::Stopped);
    }
}

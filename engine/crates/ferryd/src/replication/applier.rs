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
//! A corrupt relay event, a refused GTID (strict mode, two masters) or a diverged row (a before image that is
//! not the row here, with no predecessor in flight to explain it) stops the connection, naming the relay file
//! and offset, the GTIDs, or the row; nothing of a refused batch is applied, so no domain is left with a gap.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use ferry_core::binlog::event::flags;
use ferry_core::binlog::reader::Transaction;
use ferry_core::binlog::writer::now_us;
use ferry_core::gtid::{DomainId, Gtid};
use ferry_core::node::{Node, TxnError};
use ferry_core::relay::RelayReader;
use ferry_core::row::Row;
use serde::{Deserialize, Serialize};

use super::filter::DomainFilter;
use super::shared::Shared;
use super::status::SqlState;
use super::until::Until;

/// How long the SQL side sleeps at most between looks at the stop flag.
const IDLE_WAIT: Duration = Duration::from_millis(100);
/// Most transactions read ahead of what is applied (their bytes are bounded by `--read-ahead-bytes-max`).
const READ_AHEAD_TXNS_MAX: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ParallelMode {
    #[default]
    Serial,
    Conservative,
    Optimistic,
}

/// How a connection applies: mode, transactions in flight at once, and how many of them one domain may have.
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
}

/// The relay-log bytes of a transaction read ahead: what the read-ahead bound counts.
fn relay_bytes(txn: &Transaction) -> u64 {
    txn.end_offset.saturating_sub(txn.offset)
}

/// Transactions read from the relay log and not yet applied, per domain in relay order (each with its place
/// in the relay log, so serial apply keeps the relay's order across domains too).
#[derive(Default)]
struct ReadAhead {
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

/// Why a batch could not be built.
struct Refusal {
    code: &'static str,
    gtid: Gtid,
    error: TxnError,
}

impl SqlSide {
    pub fn run(mut self) {
        let mut ahead = ReadAhead::default();
        if self.until_reached(&ahead) {
            return self.finish_until();
        }
        self.set_state(SqlState::WaitingForRelay);
        while !self.shared.stopping() {
            if self.shared.sql_paused() {
                self.set_state(SqlState::Paused);
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            if let Err(e) = self.read_ahead(&mut ahead) {
                self.shared.fail("sql", "SKIP_FAILED", format!("recording passed-over transactions: {e}"));
                return;
            }
            if ahead.len == 0 {
                if let Some(e) = ahead.error.take() {
                    self.shared.fail("sql", "RELAY_CORRUPT", e.to_string());
                    break;
                }
                if self.until_reached(&ahead) {
                    return self.finish_until();
                }
                self.set_state(SqlState::WaitingForRelay);
                self.shared.wait_for_relay(self.relay.position(), IDLE_WAIT);
                continue;
            }
            let batch = match self.take_batch(&mut ahead) {
                Ok(batch) => batch,
                Err(Refusal { code, gtid, error }) => {
                    return self.shared.fail("sql", code, format!("applying {gtid}: {error}"));
                }
            };
            if batch.is_empty() {
                continue;
            }
            if !self.commit(batch) {
                return;
            }
            if self.until_reached(&ahead) {
                return self.finish_until();
            }
        }
        let mut status = self.shared.status.lock();
        if status.sql_state != SqlState::Error && status.sql_state != SqlState::UntilReached {
            status.sql_state = SqlState::Stopped;
        }
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
            ahead.read += 1;
            ahead.bytes += relay_bytes(&txn);
            ahead.by_domain.entry(txn.gtid().domain).or_default().push_back((ahead.read, txn));
            ahead.len += 1;
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

    /// The next batch: domains in turn, each within its limit, every member checked (GTID, duplicates, before
    /// images over its predecessors in the batch); a conflicting one waits for the next batch.
    fn take_batch(&mut self, ahead: &mut ReadAhead) -> Result<Vec<Transaction>, Refusal> {
        let (batch_max, domain_max) = self.parallel.limits();
        let mut batch: Vec<Transaction> = Vec::new();
        let mut pending_rows: HashMap<(String, String), Option<Row>> = HashMap::new();
        let position = self.node.position();
        let domains: Vec<DomainId> = if self.parallel.mode == ParallelMode::Serial {
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
        ahead.next_turn = ahead.next_turn.wrapping_add(1);
        for &domain in domains.iter().cycle().skip(start).take(domains.len()) {
            let queue = ahead.by_domain.get_mut(&domain).expect("listed");
            let mut taken = 0usize;
            let mut last: Option<(Gtid, u64)> = None;
            while batch.len() < batch_max && taken < domain_max {
                let Some((_, txn)) = queue.front() else { break };
                let gtid = txn.gtid();
                let have = last.map(|(g, _)| g).or_else(|| position.get(domain));
                if self.ignore_duplicates && have.is_some_and(|h| h.seq >= gtid.seq) {
                    let (_, skipped) = queue.pop_front().expect("front exists");
                    ahead.len -= 1;
                    ahead.bytes -= relay_bytes(&skipped);
                    self.shared.status.lock().duplicates_skipped += 1;
                    continue;
                }
                if let Some((prev, commit_id)) = last {
                    if prev.seq >= gtid.seq {
                        let violation =
                            ferry_core::gtid_alloc::StrictModeViolation { domain, offered: gtid, have: prev };
                        return Err(Refusal { code: "STRICT_MODE", gtid, error: TxnError::Strict(violation) });
                    }
                    let same_group =
                        commit_id == txn.header.commit_id && txn.header.flags & (flags::WAITED | flags::DDL) == 0;
                    if self.parallel.mode == ParallelMode::Conservative && !same_group {
                        break;
                    }
                } else if let Err(error) = self.node.check_replicated_gtid(gtid) {
                    let code = if matches!(error, TxnError::TwoMasters(_)) { "TWO_MASTERS" } else { "STRICT_MODE" };
                    return Err(Refusal { code, gtid, error });
                }
                let full = txn.header.flags & flags::BEFORE_IMAGES != 0;
                match self.node.check_before_images(&txn.changes, full, &pending_rows) {
                    Ok(()) => {}
                    Err(TxnError::RowMismatch { .. }) if taken > 0 => {
                        // A predecessor in this batch has to commit first: retried in the next batch.
                        let mut status = self.shared.status.lock();
                        status.conflicts += 1;
                        status.retries += 1;
                        break;
                    }
                    Err(error @ TxnError::RowMismatch { .. }) => {
                        return Err(Refusal { code: "ROW_MISMATCH", gtid, error })
                    }
                    Err(error) => return Err(Refusal { code: "APPLY_FAILED", gtid, error }),
                }
                if !self.due(txn) {
                    // Delayed replica: nothing later is due either.
                    break;
                }
                let (_, txn) = queue.pop_front().expect("front exists");
                ahead.len -= 1;
                ahead.bytes -= relay_bytes(&txn);
                for c in &txn.changes {
                    pending_rows.insert((c.table.clone(), c.key.clone()), c.after.clone());
                }
                last = Some((gtid, txn.header.commit_id));
                taken += 1;
                batch.push(txn);
            }
        }
        ahead.by_domain.retain(|_, q| !q.is_empty());
        self.note_read_ahead(ahead.bytes);
        if batch.is_empty() && self.delay_s > 0 {
            self.set_state(SqlState::Delaying);
            std::thread::sleep(IDLE_WAIT);
        }
        Ok(batch)
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
        let pending = |domain: DomainId| ahead.by_domain.get(&domain).is_some_and(|q| !q.is_empty());
        until.reached(&self.node.position(), pending)
    }

    fn finish_until(&self) {
        tracing::info!(connection = %self.shared.name, until = ?self.until.as_ref().map(|u| u.position().to_string()), "replication reached its UNTIL position");
        self.set_state(SqlState::UntilReached);
        self.shared.stopped_by_itself();
    }

    /// Whether a delayed replica may apply the transaction now.
    fn due(&self, txn: &Transaction) -> bool {
        self.delay_s == 0 || now_us() >= txn.header.commit_ts_us + self.delay_s * 1_000_000
    }
}

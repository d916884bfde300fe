//! The replica state: gtid_slave_pos (set, passed over, applied), gtid_current_pos, and the checks and batch
//! commit replication's SQL side applies through.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{Node, NodeError, TxnError};
use crate::binlog::event::{flags, GtidEvent};
use crate::commit::{AwaitingReplicas, CommitError, CommitMode, Committed, GtidOverride, PreparedTxn};
use crate::gtid::{Gtid, GtidPosition, ServerId};
use crate::gtid_alloc::StrictModeViolation;
use crate::row::{Row, RowChange};
use crate::store::{Store, StoreError};

impl Node {
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

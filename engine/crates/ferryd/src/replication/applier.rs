//! The SQL side of a replication connection: applies relay-log transactions in order through the node's
//! replicated-apply path (original GTID kept, binlogged, gtid_slave_pos updated in the same atomic state),
//! honouring START ... UNTIL and the connection's delay. A corrupt relay event or a refused transaction stops
//! the connection with the file and offset, or the GTIDs, in the error.

use std::sync::Arc;
use std::time::Duration;

use ferry_core::binlog::reader::Transaction;
use ferry_core::binlog::writer::now_us;
use ferry_core::gtid::GtidPosition;
use ferry_core::node::{Node, TxnError};
use ferry_core::relay::RelayReader;

use super::shared::Shared;
use super::status::SqlState;

/// How long the SQL side sleeps at most between looks at the stop flag.
const IDLE_WAIT: Duration = Duration::from_millis(100);

pub struct SqlSide {
    pub shared: Arc<Shared>,
    pub node: Arc<Node>,
    pub relay: RelayReader,
    pub ignore_duplicates: bool,
    pub delay_s: u64,
    /// START ... UNTIL: each listed domain stops at its GTID; unlisted domains are not applied at all.
    pub until: Option<GtidPosition>,
}

impl SqlSide {
    pub fn run(mut self) {
        if self.until_reached() {
            return self.finish_until();
        }
        self.set_state(SqlState::WaitingForRelay);
        while !self.shared.stopping() {
            let written = match self.shared.wait_for_relay(self.relay.position(), IDLE_WAIT) {
                Some(end) => end,
                None => continue,
            };
            let txn = match self.relay.next(written) {
                Ok(Some(txn)) => txn,
                Ok(None) => {
                    self.set_state(SqlState::WaitingForRelay);
                    continue;
                }
                Err(e) => {
                    self.set_state(SqlState::Error);
                    return self.shared.fail("sql", "RELAY_CORRUPT", e.to_string());
                }
            };
            if !self.wanted(&txn) {
                continue;
            }
            if !self.wait_for_delay(&txn) {
                break;
            }
            self.set_state(SqlState::Applying);
            let (gtid, ts) = (txn.gtid(), txn.header.commit_ts_us);
            match self.node.apply_replicated(txn.header, txn.changes, self.ignore_duplicates) {
                Ok(Some(_)) => self.shared.status.lock().applied(gtid, ts),
                Ok(None) => self.shared.status.lock().duplicates_skipped += 1,
                Err(e) => {
                    self.set_state(SqlState::Error);
                    let code = match &e {
                        TxnError::Strict(_) => "STRICT_MODE",
                        TxnError::TwoMasters(_) => "TWO_MASTERS",
                        _ => "APPLY_FAILED",
                    };
                    return self.shared.fail("sql", code, format!("applying {gtid}: {e}"));
                }
            }
            if self.until_reached() {
                return self.finish_until();
            }
        }
        self.set_state(SqlState::Stopped);
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

//! What a replication connection reports: IO and SQL states, received and applied positions, per-domain lag in
//! transactions and seconds, counters and the last error with a stable code.

use std::collections::BTreeMap;

use ferry_core::gtid::{DomainId, Gtid, GtidPosition};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IoState {
    Stopped,
    Connecting,
    /// Connected and streaming.
    Connected,
    /// Lost the master; retrying after a pause.
    Reconnecting,
    /// Stopped by an error that retrying cannot fix.
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SqlState {
    Stopped,
    /// Everything received is applied.
    WaitingForRelay,
    Applying,
    /// Waiting for a transaction's delay to pass.
    Delaying,
    /// Started with `sql_paused`: waiting for `resume-sql`.
    Paused,
    /// START ... UNTIL reached its position.
    UntilReached,
    Error,
}

/// A replication error, with a stable code clients can match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ReplError {
    /// `io` or `sql`.
    pub side: &'static str,
    pub code: String,
    pub message: String,
    pub at_us: u64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DomainLag {
    pub transactions: u64,
    pub seconds: f64,
}

/// Shared by the IO and SQL sides; snapshot by the admin API.
#[derive(Debug, Clone)]
pub struct ConnectionStatus {
    pub io_state: IoState,
    pub sql_state: SqlState,
    /// Newest GTID per domain received from the master (written to the relay log).
    pub received: GtidPosition,
    /// Newest GTID per domain applied through this connection.
    pub applied: GtidPosition,
    /// The master's binlog position as last heard (heartbeats and received transactions).
    pub master_position: GtidPosition,
    /// Commit time (on the origin) of the last transaction applied per domain.
    pub applied_commit_ts_us: BTreeMap<DomainId, u64>,
    pub last_heartbeat_us: Option<u64>,
    pub transactions_received: u64,
    pub transactions_applied: u64,
    pub duplicates_skipped: u64,
    /// Transactions passed over by the skip counter, and by the domain filters.
    pub transactions_skipped: u64,
    pub transactions_filtered: u64,
    /// What is left of the skip counter the connection started with.
    pub skip_counter: u64,
    /// Optimistic parallel apply: transactions that conflicted with an uncommitted predecessor, and retries.
    pub conflicts: u64,
    pub retries: u64,
    pub reconnects: u64,
    pub last_error: Option<ReplError>,
    pub until: Option<GtidPosition>,
    /// Connected, with the relay log at `--relay-log-space-bytes-max`: receiving waits until the SQL side has
    /// applied and purged relay files (MariaDB's IO state "Waiting for the slave SQL thread to free enough relay
    /// log space"). A flag beside `io_state`, which stays `connected`.
    pub waiting_for_relay_space: bool,
    /// The most the relay log's files took on disk at once since the connection started.
    pub relay_log_space_bytes_peak: u64,
    /// Bytes the SQL side has read ahead of what it applied (relay-log bytes), and the most at once.
    pub read_ahead_bytes: u64,
    pub read_ahead_bytes_peak: u64,
}

impl Default for ConnectionStatus {
    fn default() -> Self {
        ConnectionStatus {
            io_state: IoState::Stopped,
            sql_state: SqlState::Stopped,
            received: GtidPosition::new(),
            applied: GtidPosition::new(),
            master_position: GtidPosition::new(),
            applied_commit_ts_us: BTreeMap::new(),
            last_heartbeat_us: None,
            transactions_received: 0,
            transactions_applied: 0,
            duplicates_skipped: 0,
            transactions_skipped: 0,
            transactions_filtered: 0,
            skip_counter: 0,
            conflicts: 0,
            retries: 0,
            reconnects: 0,
            last_error: None,
            until: None,
            waiting_for_relay_space: false,
            relay_log_space_bytes_peak: 0,
            read_ahead_bytes: 0,
            read_ahead_bytes_peak: 0,
        }
    }
}

impl ConnectionStatus {
    pub fn received(&mut self, gtid: Gtid) {
        self.received.advance(gtid);
        self.master_position.advance(gtid);
        self.transactions_received += 1;
    }

    pub fn applied(&mut self, gtid: Gtid, commit_ts_us: u64) {
        self.applied.advance(gtid);
        self.applied_commit_ts_us.insert(gtid.domain, commit_ts_us);
        self.transactions_applied += 1;
    }

    /// A transaction passed over (skip counter or domain filter): it counts as caught up for the position and
    /// the lag, as its GTID is in gtid_slave_pos.
    pub fn passed_over(&mut self, gtid: Gtid, commit_ts_us: u64) {
        self.applied.advance(gtid);
        self.applied_commit_ts_us.insert(gtid.domain, commit_ts_us);
    }

    /// Per domain the master has: how far behind the applied position is, in transactions (seq_no difference)
    /// and in seconds (now minus the origin commit time of the last applied transaction; 0 when caught up).
    pub fn lag(&self, base: &GtidPosition, now_us: u64) -> BTreeMap<DomainId, DomainLag> {
        let applied = base.join(&self.applied);
        self.master_position
            .iter()
            .map(|m| {
                let have = applied.get(m.domain).map_or(0, |g| g.seq);
                let transactions = m.seq.saturating_sub(have);
                let seconds = if transactions == 0 {
                    0.0
                } else {
                    let since = self.applied_commit_ts_us.get(&m.domain).copied().unwrap_or(now_us);
                    now_us.saturating_sub(since) as f64 / 1e6
                };
                (m.domain, DomainLag { transactions, seconds })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_is_zero_when_caught_up_and_counts_per_domain_otherwise() {
        let mut s = ConnectionStatus::default();
        s.received(Gtid::new(1, 1, 10));
        s.received(Gtid::new(2, 2, 5));
        s.applied(Gtid::new(1, 1, 10), 1_000_000);
        s.applied(Gtid::new(2, 2, 2), 2_000_000);
        let lag = s.lag(&GtidPosition::new(), 4_500_000);
        assert_eq!(lag[&1].transactions, 0);
        assert_eq!(lag[&1].seconds, 0.0);
        assert_eq!(lag[&2].transactions, 3);
        assert_eq!(lag[&2].seconds, 2.5);
    }
}

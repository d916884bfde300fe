//! Semi-synchronous replication ("network durability"): with durability `network` or `local+network`, a commit
//! group is acknowledged to its clients only after at least K replicas confirmed they received it (wrote it to
//! their relay log). When no K replicas confirm within the timeout, the master falls back to asynchronous
//! replication — and says so in its status and metrics — until K replicas have caught up again.
//!
//! Where a group waits ([`WaitPoint`], MariaDB's `rpl_semi_sync_master_wait_point`): `after_commit` (the default)
//! waits once the group is visible on the master, so only the acknowledgement to the committing client waits;
//! `after_sync` waits after the binlog write and fsync and before the group is applied to the store, so no client
//! of the master sees a transaction that no replica has (lossless). The commit pipeline does the waiting
//! (`crate::commit`); this module counts confirmations. Only this node's own clients wait:
//! transactions applied by replication never do (every node of a cluster runs with semi-sync on, so that a
//! promoted replica keeps the guarantee, and a replica must not stall its apply waiting for replicas it lacks).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde::Serialize;

use crate::binlog::BinlogCoord;

/// Where a commit group waits for its replicas' confirmations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitPoint {
    /// After the group is committed (visible on the master): the client's acknowledgement waits.
    #[default]
    AfterCommit,
    /// After the binlog write and fsync, before the group is visible on the master (lossless).
    AfterSync,
}

impl WaitPoint {
    pub fn name(self) -> &'static str {
        match self {
            WaitPoint::AfterCommit => "after_commit",
            WaitPoint::AfterSync => "after_sync",
        }
    }
}

impl std::str::FromStr for WaitPoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "after_commit" | "after-commit" => Ok(WaitPoint::AfterCommit),
            "after_sync" | "after-sync" => Ok(WaitPoint::AfterSync),
            other => Err(format!("semi-sync wait point {other:?}: use after_sync or after_commit")),
        }
    }
}

/// Semi-sync settings of a master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SemiSyncConfig {
    /// Replicas that must confirm a group before its clients hear back.
    pub replicas_required: usize,
    /// How long a group waits for them before the master falls back to asynchronous replication.
    pub timeout: Duration,
    /// Where a group waits: after it is committed, or after its binlog fsync and before it is visible.
    pub wait_point: WaitPoint,
}

#[derive(Debug, Clone, Serialize)]
pub struct SemiSyncStatus {
    /// `on` (waiting for confirmations) or `fallen_back` (asynchronous after a timeout).
    pub state: &'static str,
    pub replicas_required: usize,
    /// `after_commit` or `after_sync`.
    pub wait_point: WaitPoint,
    /// Replicas connected and confirming now.
    pub replicas_connected: usize,
    pub timeout_ms: u64,
    /// Groups that waited for confirmations, and how many of those waits timed out.
    pub waits: u64,
    pub timeouts: u64,
    /// Total time groups spent waiting, in microseconds.
    pub wait_us_total: u64,
}

#[derive(Default)]
struct State {
    /// Per connected replica: the master coordinate it confirmed receiving up to.
    acked: BTreeMap<u64, BinlogCoord>,
    fallen_back: bool,
    waits: u64,
    timeouts: u64,
    wait_us_total: u64,
}

pub struct SemiSync {
    config: SemiSyncConfig,
    state: Mutex<State>,
    acked: Condvar,
}

/// How a group's wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    Confirmed(Duration),
    /// No K confirmations in time: the master is asynchronous from now on, until replicas catch up.
    TimedOut,
    /// Already fallen back: not waited.
    Asynchronous,
}

impl SemiSync {
    pub fn new(config: SemiSyncConfig) -> Self {
        SemiSync { config, state: Mutex::new(State::default()), acked: Condvar::new() }
    }

    pub fn config(&self) -> SemiSyncConfig {
        self.config
    }

    /// A replica's stream starts (`at` is where it starts receiving).
    pub fn connect(&self, replica: u64, at: BinlogCoord) {
        self.state.lock().acked.insert(replica, at);
    }

    pub fn disconnect(&self, replica: u64) {
        self.state.lock().acked.remove(&replica);
        self.acked.notify_all();
    }

    /// A replica confirms having received everything up to `through`.
    pub fn ack(&self, replica: u64, through: BinlogCoord) {
        let mut state = self.state.lock();
        if let Some(have) = state.acked.get_mut(&replica) {
            *have = (*have).max(through);
        }
        self.acked.notify_all();
    }

    fn confirmed(&self, state: &State, through: BinlogCoord) -> bool {
        state.acked.values().filter(|a| **a >= through).count() >= self.config.replicas_required
    }

    /// Called with `binlog_end`, the master's newest group end: once K replicas have confirmed it, a fallen-back
    /// master is semi-synchronous again.
    pub fn maybe_recover(&self, binlog_end: BinlogCoord) {
        let mut state = self.state.lock();
        if state.fallen_back && self.confirmed(&state, binlog_end) {
            state.fallen_back = false;
            tracing::info!(
                "semi-sync: {} replica(s) caught up; commits wait for confirmations again",
                self.config.replicas_required
            );
        }
    }

    /// Waits until K replicas confirmed `through`, or the timeout. Blocking.
    pub fn wait(&self, through: BinlogCoord) -> WaitOutcome {
        let started = Instant::now();
        let deadline = started + self.config.timeout;
        let mut state = self.state.lock();
        if state.fallen_back {
            return WaitOutcome::Asynchronous;
        }
        state.waits += 1;
        while !self.confirmed(&state, through) {
            if self.acked.wait_until(&mut state, deadline).timed_out() && !self.confirmed(&state, through) {
                state.fallen_back = true;
                state.timeouts += 1;
                state.wait_us_total += started.elapsed().as_micros() as u64;
                tracing::warn!(
                    required = self.config.replicas_required,
                    timeout_ms = self.config.timeout.as_millis() as u64,
                    "semi-sync: no confirmation in time; falling back to asynchronous replication"
                );
                return WaitOutcome::TimedOut;
            }
        }
        let took = started.elapsed();
        state.wait_us_total += took.as_micros() as u64;
        WaitOutcome::Confirmed(took)
    }

    pub fn status(&self) -> SemiSyncStatus {
        let state = self.state.lock();
        SemiSyncStatus {
            state: if state.fallen_back { "fallen_back" } else { "on" },
            replicas_required: self.config.replicas_required,
            wait_point: self.config.wait_point,
            replicas_connected: state.acked.len(),
            timeout_ms: self.config.timeout.as_millis() as u64,
            waits: state.waits,
            timeouts: state.timeouts,
            wait_us_total: state.wait_us_total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn at(offset: u64) -> BinlogCoord {
        BinlogCoord { file_seq: 1, offset }
    }

    #[test]
    fn a_group_waits_for_k_confirmations() {
        let s = Arc::new(SemiSync::new(SemiSyncConfig {
            replicas_required: 2,
            timeout: Duration::from_secs(10),
            wait_point: WaitPoint::AfterCommit,
        }));
        s.connect(1, at(0));
        s.connect(2, at(0));
        let waiter = {
            let s = s.clone();
            std::thread::spawn(move || s.wait(at(100)))
        };
        s.ack(1, at(100));
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished(), "one confirmation of two is not enough");
        s.ack(2, at(150));
        assert!(matches!(waiter.join().unwrap(), WaitOutcome::Confirmed(_)));
        assert_eq!(s.status().waits, 1);
    }

    #[test]
    fn a_timeout_falls_back_to_asynchronous_until_replicas_catch_up() {
        let s = SemiSync::new(SemiSyncConfig {
            replicas_required: 1,
            timeout: Duration::from_millis(30),
            wait_point: WaitPoint::AfterSync,
        });
        assert_eq!(s.wait(at(10)), WaitOutcome::TimedOut);
        assert_eq!(s.status().state, "fallen_back");
        assert_eq!(s.wait(at(20)), WaitOutcome::Asynchronous, "no more waiting while fallen back");
        s.connect(7, at(0));
        s.maybe_recover(at(20));
        assert_eq!(s.status().state, "fallen_back", "the replica has not confirmed the end yet");
        s.ack(7, at(20));
        s.maybe_recover(at(20));
        assert_eq!(s.status().state, "on");
        assert_eq!(s.status().timeouts, 1);
    }
}

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
//!
//! Change consumers are sent nothing a failover could lose: a group of this node's clients is *held* from the
//! moment it is written ([`SemiSync::hold`], under the binlog lock, before the binlog's end moves past it) until
//! its wait ends confirmed, timed out or asynchronous — never when the node's stop ended it — and consumers read
//! the binlog only up to the start of the first held group ([`SemiSync::held_from`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use serde::Serialize;

use crate::binlog::BinlogCoord;
use crate::clock::Clock;

/// Where a commit group waits for its replicas' confirmations.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// The node is stopping: no group waits any more (see `stop`).
    stopping: bool,
    waits: u64,
    timeouts: u64,
    wait_us_total: u64,
    /// Where each group of this node's clients whose wait has not ended starts in the binlog (how many groups
    /// start there): change consumers are sent nothing from the first one on.
    held: BTreeMap<BinlogCoord, usize>,
}

pub struct SemiSync {
    config: SemiSyncConfig,
    state: Mutex<State>,
    acked: Condvar,
    /// Counts releases of held groups: a change consumer waiting at a held group wakes on it.
    releases: tokio::sync::watch::Sender<u64>,
    /// What the timeout is measured on (the node's clock; a manual one in tests).
    clock: Arc<dyn Clock>,
}

/// How a group's wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    Confirmed(Duration),
    /// No K confirmations in time: the master is asynchronous from now on, until replicas catch up.
    TimedOut,
    /// Already fallen back: not waited.
    Asynchronous,
    /// The node is stopping: the wait ended before K confirmations, and the clients are told that their
    /// commits' fate is unknown (written here, maybe on no replica), never that they are replicated.
    Stopped,
}

impl SemiSync {
    /// Semi-sync timed by the system clock.
    pub fn new(config: SemiSyncConfig) -> Self {
        Self::with_clock(config, crate::clock::system())
    }

    /// Semi-sync whose timeout runs on `clock`.
    pub fn with_clock(config: SemiSyncConfig, clock: Arc<dyn Clock>) -> Self {
        let releases = tokio::sync::watch::Sender::new(0);
        SemiSync { config, state: Mutex::new(State::default()), acked: Condvar::new(), releases, clock }
    }

    /// Holds back from change consumers what is written from `from` on (the start of a group of this node's
    /// clients, registered before the binlog's end moves past it) until the returned guard is dropped.
    pub fn hold(self: &Arc<Self>, from: BinlogCoord) -> Held {
        *self.state.lock().held.entry(from).or_default() += 1;
        Held { semi_sync: self.clone(), from, kept: false }
    }

    fn release(&self, from: BinlogCoord) {
        {
            let mut state = self.state.lock();
            let Some(count) = state.held.get_mut(&from) else {
                debug_assert!(false, "released a group never held at {from:?}");
                return;
            };
            *count -= 1;
            if *count == 0 {
                state.held.remove(&from);
            }
        }
        self.releases.send_modify(|n| *n += 1);
    }

    /// Where the first group still held back from change consumers starts, if one is.
    pub fn held_from(&self) -> Option<BinlogCoord> {
        self.state.lock().held.keys().next().copied()
    }

    /// Changes whenever a held group is released.
    pub fn releases(&self) -> tokio::sync::watch::Receiver<u64> {
        self.releases.subscribe()
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

    /// Ends every wait, now and from now on, with [`WaitOutcome::Stopped`]: the node is shutting down, so a
    /// timeout of many minutes does not hold its stop (MariaDB ends semi-sync waits at shutdown as well).
    pub fn stop(&self) {
        let mut state = self.state.lock();
        if !state.stopping {
            state.stopping = true;
            tracing::info!("semi-sync: stopping; commits still waiting for confirmations end with an unknown outcome");
        }
        self.acked.notify_all();
    }

    /// Waits until K replicas confirmed `through`, the timeout (on the semi-sync clock), or `stop`. Blocking.
    pub fn wait(&self, through: BinlogCoord) -> WaitOutcome {
        let started = self.clock.elapsed();
        let deadline = started + self.config.timeout;
        let mut state = self.state.lock();
        if state.fallen_back {
            return WaitOutcome::Asynchronous;
        }
        state.waits += 1;
        loop {
            let now = self.clock.elapsed();
            let took = now.saturating_sub(started);
            if self.confirmed(&state, through) {
                state.wait_us_total += took.as_micros() as u64;
                return WaitOutcome::Confirmed(took);
            }
            if state.stopping {
                state.wait_us_total += took.as_micros() as u64;
                return WaitOutcome::Stopped;
            }
            if now >= deadline {
                state.fallen_back = true;
                state.timeouts += 1;
                state.wait_us_total += took.as_micros() as u64;
                tracing::warn!(
                    required = self.config.replicas_required,
                    timeout_ms = self.config.timeout.as_millis() as u64,
                    "semi-sync: no confirmation in time; falling back to asynchronous replication"
                );
                return WaitOutcome::TimedOut;
            }
            self.acked.wait_for(&mut state, self.clock.wait_slice(deadline - now));
        }
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

/// A group of this node's clients held back from change consumers ([`SemiSync::hold`]): released when dropped
/// (its wait ended confirmed, timed out or asynchronous), unless [`Held::keep`] says otherwise.
#[must_use = "a hold is released when dropped"]
pub struct Held {
    semi_sync: Arc<SemiSync>,
    /// Where the group starts in the binlog.
    from: BinlogCoord,
    /// The node's stop ended the wait before K confirmations: the group stays held (it may be on no replica).
    kept: bool,
}

impl Held {
    /// The group stays held for as long as this node runs: its wait ended unconfirmed (the node stops).
    pub fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.kept {
            self.semi_sync.release(self.from);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn at(offset: u64) -> BinlogCoord {
        BinlogCoord { file_seq: 1, offset }
    }

    fn semi_sync(replicas_required: usize, timeout: Duration, clock: &ManualClock) -> Arc<SemiSync> {
        let config = SemiSyncConfig { replicas_required, timeout, wait_point: WaitPoint::AfterCommit };
        Arc::new(SemiSync::with_clock(config, clock.handle()))
    }

    /// Waits on another thread; returns once that wait has begun (read the clock for its deadline), so that
    /// the test's moves of the clock come after it.
    fn waiting(s: &Arc<SemiSync>, through: BinlogCoord) -> std::thread::JoinHandle<WaitOutcome> {
        let begun = s.status().waits;
        let waiter = {
            let s = s.clone();
            std::thread::spawn(move || s.wait(through))
        };
        while s.status().waits == begun {
            std::thread::yield_now();
        }
        waiter
    }

    #[test]
    fn a_group_waits_for_k_confirmations_however_long_they_take_within_the_timeout() {
        let clock = ManualClock::new(0);
        let s = semi_sync(2, Duration::from_secs(10), &clock);
        s.connect(1, at(0));
        s.connect(2, at(0));
        let waiter = waiting(&s, at(100));
        s.ack(1, at(100));
        clock.advance(Duration::from_millis(9_999));
        s.ack(1, at(120));
        assert!(!waiter.is_finished(), "one confirmation of two is not enough, and the timeout is not reached");
        s.ack(2, at(150));
        assert_eq!(waiter.join().unwrap(), WaitOutcome::Confirmed(Duration::from_millis(9_999)));
        let status = s.status();
        assert_eq!((status.waits, status.timeouts, status.wait_us_total), (1, 0, 9_999_000));
        assert_eq!(status.state, "on");
    }

    /// The timeout is the clock's: a ten-minute timeout is passed by moving the clock, not by waiting ten
    /// minutes; and a moment before it the group still waits.
    #[test]
    fn a_group_falls_back_exactly_at_its_timeout_on_the_semi_sync_clock() {
        let clock = ManualClock::new(0);
        let s = semi_sync(1, Duration::from_secs(600), &clock);
        s.connect(7, at(0));
        let waiter = waiting(&s, at(10));
        clock.advance(Duration::from_secs(599));
        assert!(!waiter.is_finished(), "599 s of a 600 s timeout");
        clock.advance(Duration::from_secs(1));
        assert_eq!(waiter.join().unwrap(), WaitOutcome::TimedOut);
        let status = s.status();
        assert_eq!((status.state, status.timeouts, status.wait_us_total), ("fallen_back", 1, 600_000_000));
    }

    /// A stop ends a wait that would otherwise last its ten-minute timeout, and every wait after it.
    #[test]
    fn a_stop_ends_waits_at_once_with_an_unknown_outcome() {
        let clock = ManualClock::new(0);
        let s = semi_sync(1, Duration::from_secs(600), &clock);
        s.connect(7, at(0));
        let waiter = waiting(&s, at(100));
        s.stop();
        assert_eq!(waiter.join().unwrap(), WaitOutcome::Stopped);
        assert_eq!(s.wait(at(200)), WaitOutcome::Stopped, "a group after the stop does not wait either");
        let status = s.status();
        assert_eq!((status.state, status.timeouts), ("on", 0), "a stop is not a timeout: no fallback recorded");
    }

    #[test]
    fn a_timeout_falls_back_to_asynchronous_until_replicas_catch_up() {
        let clock = ManualClock::new(0);
        let s = semi_sync(1, Duration::from_millis(30), &clock);
        let waiter = waiting(&s, at(10));
        clock.advance(Duration::from_millis(30));
        assert_eq!(waiter.join().unwrap(), WaitOutcome::TimedOut);
        assert_eq!(s.status().state, "fallen_back");
        assert_eq!(s.wait(at(20)), WaitOutcome::Asynchronous, "no more waiting while fallen back");
        s.connect(7, at(0));
        s.maybe_recover(at(20));
        assert_eq!(s.status().state, "fallen_back", "the replica has not confirmed the end yet");
        s.ack(7, at(20));
        s.maybe_recover(at(20));
        assert_eq!(s.status().state, "on");
        assert_eq!(s.status().timeouts, 1);
        assert_eq!(s.wait(at(20)), WaitOutcome::Confirmed(Duration::ZERO), "confirmed already: no wait");
    }

    #[test]
    fn a_replica_that_disconnects_no_longer_counts() {
        let clock = ManualClock::new(0);
        let s = semi_sync(1, Duration::from_secs(1), &clock);
        s.connect(1, at(0));
        s.ack(1, at(50));
        s.disconnect(1);
        s.ack(1, at(100));
        assert_eq!(s.status().replicas_connected, 0);
        let waiter = waiting(&s, at(50));
        clock.advance(Duration::from_secs(1));
        assert_eq!(waiter.join().unwrap(), WaitOutcome::TimedOut);
    }

    #[test]
    fn consumers_are_held_at_the_first_group_still_waiting_and_a_stop_keeps_it_held() {
        let clock = ManualClock::new(0);
        let s = semi_sync(1, Duration::from_secs(1), &clock);
        let mut releases = s.releases();
        assert_eq!(s.held_from(), None);
        let first = s.hold(at(10));
        let second = s.hold(at(40));
        let twin = s.hold(at(40));
        assert_eq!(s.held_from(), Some(at(10)), "the first group still waiting");
        drop(second);
        assert_eq!(s.held_from(), Some(at(10)), "a later group's end frees nothing before the first's");
        assert!(releases.has_changed().unwrap(), "a release wakes consumers");
        releases.borrow_and_update();
        drop(first);
        assert_eq!(
            s.held_from(),
            Some(at(40)),
            "two holds at 40 (a group that wrote nothing and the next one start at the same place): one is left"
        );
        twin.keep();
        assert_eq!(s.held_from(), Some(at(40)), "kept: its wait ended unconfirmed");
        assert!(releases.has_changed().unwrap());
    }
}

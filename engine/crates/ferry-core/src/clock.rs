//! The clock the replica's timed decisions read: semi-sync's timeout and the replica delay (MASTER_DELAY).
//!
//! [`SystemClock`] is the machine's clock. [`ManualClock`] moves only when a test or a simulation calls
//! [`ManualClock::advance`], so a timeout or a delay is tested by moving the clock past it, never by waiting for
//! it: what a component decides depends only on what the clock says, and the clock says what the test set.

use std::fmt::Debug;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex};

/// The longest real time a wait on a [`ManualClock`] blocks before its caller looks again (at the clock and at
/// whatever else it waits for: a stop flag, a condition).
const MANUAL_WAIT_SLICE: Duration = Duration::from_millis(2);

/// Where time comes from.
pub trait Clock: Debug + Send + Sync {
    /// Wall time, microseconds since the Unix epoch (compared with the commit times transactions carry).
    fn now_us(&self) -> u64;
    /// Monotonic time since this clock's origin (timeouts: never jumps back).
    fn elapsed(&self) -> Duration;
    /// Waits for `d` of this clock's time, or less: callers look again at what they wait for when it returns.
    fn sleep(&self, d: Duration);
    /// How long, in real time, to block on a condition variable while `remaining` of this clock's time is left
    /// (the whole of it on the system clock; a short slice on a manual one, whose time moves by other hands).
    fn wait_slice(&self, remaining: Duration) -> Duration;
}

/// The machine's clock.
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

/// The shared handle on the system clock.
pub fn system() -> Arc<dyn Clock> {
    static SYSTEM: OnceLock<Arc<dyn Clock>> = OnceLock::new();
    SYSTEM.get_or_init(|| Arc::new(SystemClock { origin: Instant::now() })).clone()
}

impl Clock for SystemClock {
    fn now_us(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
    }

    fn elapsed(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }

    fn wait_slice(&self, remaining: Duration) -> Duration {
        remaining
    }
}

/// A clock that moves only when told to (tests and the replica simulation). Clones share it.
#[derive(Debug, Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

#[derive(Debug)]
struct ManualInner {
    /// Time moved so far, from the origin.
    elapsed: Mutex<Duration>,
    /// The wall time at the origin, microseconds since the Unix epoch.
    origin_us: u64,
    /// Wakes sleepers when the clock moves.
    moved: Condvar,
}

impl ManualClock {
    /// A clock standing at `origin_us` (wall time, microseconds since the Unix epoch).
    pub fn new(origin_us: u64) -> Self {
        ManualClock {
            inner: Arc::new(ManualInner { elapsed: Mutex::new(Duration::ZERO), origin_us, moved: Condvar::new() }),
        }
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        *self.inner.elapsed.lock() += d;
        self.inner.moved.notify_all();
    }

    /// This clock as the shared handle components take.
    pub fn handle(&self) -> Arc<dyn Clock> {
        Arc::new(self.clone())
    }
}

impl Clock for ManualClock {
    fn now_us(&self) -> u64 {
        self.inner.origin_us + self.elapsed().as_micros() as u64
    }

    fn elapsed(&self) -> Duration {
        *self.inner.elapsed.lock()
    }

    /// Blocks until the clock has been moved `d` forward, or a short real slice has passed (the caller looks
    /// again), whichever comes first.
    fn sleep(&self, d: Duration) {
        let mut elapsed = self.inner.elapsed.lock();
        let until = *elapsed + d;
        if *elapsed < until {
            self.inner.moved.wait_for(&mut elapsed, MANUAL_WAIT_SLICE);
        }
    }

    fn wait_slice(&self, remaining: Duration) -> Duration {
        remaining.min(MANUAL_WAIT_SLICE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced_and_both_readings_move_together() {
        let clock = ManualClock::new(1_000_000);
        assert_eq!((clock.now_us(), clock.elapsed()), (1_000_000, Duration::ZERO));
        clock.sleep(Duration::from_secs(3600));
        assert_eq!(clock.now_us(), 1_000_000, "sleeping does not move it");
        clock.advance(Duration::from_millis(1500));
        assert_eq!((clock.now_us(), clock.elapsed()), (2_500_000, Duration::from_millis(1500)));
        let shared = clock.handle();
        clock.advance(Duration::from_secs(1));
        assert_eq!(shared.now_us(), 3_500_000, "clones share the time");
    }

    #[test]
    fn the_system_clock_reads_wall_time_and_waits_whole_slices() {
        let clock = system();
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64;
        assert!(clock.now_us().abs_diff(wall) < 60_000_000);
        assert_eq!(clock.wait_slice(Duration::from_secs(5)), Duration::from_secs(5));
        assert!(ManualClock::new(0).wait_slice(Duration::from_secs(5)) <= MANUAL_WAIT_SLICE);
    }
}

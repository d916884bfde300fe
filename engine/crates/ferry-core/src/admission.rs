//! The gate of client writes: read-only, and an exact count of the client transactions admitted past it whose
//! commits are in flight (not yet answered), so that turning read-only on can tell when the last one has landed.
//!
//! The read-only flag and the count share one atomic word, so admitting is one compare-and-swap: a transaction is
//! either counted before read-only went on, or refused. None is ever past the check without being counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// The read-only bit of the gate's word; the bits below it count the transactions in flight.
const READ_ONLY: u64 = 1 << 63;
/// Most client transactions in flight the count can hold (far above any connection limit).
const IN_FLIGHT_MAX: u64 = READ_ONLY - 1;

pub struct WriteGate {
    /// [`READ_ONLY`] | the number of admitted transactions not yet answered.
    word: AtomicU64,
    /// Woken when, read-only, the count reaches zero, and when read-only is turned off (drain waits end).
    changed: Notify,
}

/// A client transaction's place in the count of commits in flight. Dropped once the transaction has its answer
/// (committed, or refused); the commit queue carries it so, so a caller that goes away does not end it early.
#[must_use = "a transaction is in flight for as long as its admission lives"]
pub struct Admitted {
    gate: Arc<WriteGate>,
}

impl std::fmt::Debug for Admitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admitted")
    }
}

/// Why a wait for the commits in flight ended before they were all answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Undrained {
    #[error(
        "{in_flight} client commit(s) admitted before read-only went on were still in flight after {waited_ms} ms"
    )]
    TimedOut { in_flight: u64, waited_ms: u64 },
    #[error("read-only was turned off while waiting for the commits in flight")]
    Writable,
}

fn count(word: u64) -> u64 {
    word & IN_FLIGHT_MAX
}

impl WriteGate {
    pub fn new(read_only: bool) -> Arc<Self> {
        Arc::new(WriteGate { word: AtomicU64::new(if read_only { READ_ONLY } else { 0 }), changed: Notify::new() })
    }

    /// Counts a client transaction in, or refuses it (None) when the node is read-only.
    pub fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let admitted = self.word.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |word| {
            if word & READ_ONLY != 0 {
                return None;
            }
            assert!(count(word) < IN_FLIGHT_MAX, "commits in flight overflow the gate's count");
            Some(word + 1)
        });
        admitted.ok().map(|_| Admitted { gate: Arc::clone(self) })
    }

    /// Turns read-only on or off; returns the commits in flight at that instant (with `on`, exactly those that
    /// were admitted before and may still land).
    pub fn set_read_only(&self, on: bool) -> u64 {
        let before = if on {
            self.word.fetch_or(READ_ONLY, Ordering::SeqCst)
        } else {
            let before = self.word.fetch_and(!READ_ONLY, Ordering::SeqCst);
            self.changed.notify_waiters();
            before
        };
        count(before)
    }

    pub fn is_read_only(&self) -> bool {
        self.word.load(Ordering::SeqCst) & READ_ONLY != 0
    }

    /// Client transactions admitted and not yet answered.
    pub fn in_flight(&self) -> u64 {
        count(self.word.load(Ordering::SeqCst))
    }

    /// Waits until the node is read-only with no commit in flight: from then on no client commit can land until
    /// read-only is turned off. Ends early, with an error, when read-only is turned off meanwhile.
    pub async fn drained(&self, timeout: Duration) -> Result<(), Undrained> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before looking, so a change between the look and the wait is not missed.
            let mut changed = std::pin::pin!(self.changed.notified());
            changed.as_mut().enable();
            let word = self.word.load(Ordering::SeqCst);
            if word & READ_ONLY == 0 {
                return Err(Undrained::Writable);
            }
            if count(word) == 0 {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                let word = self.word.load(Ordering::SeqCst);
                return match (word & READ_ONLY != 0, count(word)) {
                    (false, _) => Err(Undrained::Writable),
                    (true, 0) => Ok(()),
                    (true, in_flight) => Err(Undrained::TimedOut { in_flight, waited_ms: timeout.as_millis() as u64 }),
                };
            }
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let before = self.gate.word.fetch_sub(1, Ordering::SeqCst);
        assert!(count(before) > 0, "a commit in flight was counted out twice");
        if before == READ_ONLY | 1 {
            // The last commit admitted before read-only went on has its answer.
            self.gate.changed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
    }

    #[test]
    fn read_only_refuses_new_transactions_and_counts_the_admitted_ones_out() {
        let gate = WriteGate::new(false);
        let (a, b) = (gate.admit().unwrap(), gate.admit().unwrap());
        assert_eq!(gate.in_flight(), 2);
        assert_eq!(gate.set_read_only(true), 2, "both were admitted before read-only");
        assert!(gate.admit().is_none());
        assert_eq!(gate.in_flight(), 2, "a refused transaction is not counted");
        drop(a);
        let waited = block_on(gate.drained(Duration::from_millis(20)));
        assert_eq!(waited, Err(Undrained::TimedOut { in_flight: 1, waited_ms: 20 }));
        let waiter = std::thread::spawn({
            let gate = gate.clone();
            move || block_on(gate.drained(Duration::from_secs(30)))
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(b);
        assert_eq!(waiter.join().unwrap(), Ok(()));
        assert_eq!(gate.in_flight(), 0);
        assert_eq!(gate.set_read_only(false), 0);
        assert!(gate.admit().is_some());
    }

    #[test]
    fn turning_read_only_off_ends_a_drain_wait() {
        let gate = WriteGate::new(false);
        let _in_flight = gate.admit().unwrap();
        gate.set_read_only(true);
        let waiter = std::thread::spawn({
            let gate = gate.clone();
            move || block_on(gate.drained(Duration::from_secs(30)))
        });
        std::thread::sleep(Duration::from_millis(20));
        gate.set_read_only(false);
        assert_eq!(waiter.join().unwrap(), Err(Undrained::Writable));
        assert_eq!(block_on(gate.drained(Duration::ZERO)), Err(Undrained::Writable));
    }

    #[test]
    fn every_transaction_is_either_counted_before_read_only_or_refused() {
        // Writers admit and hold; read-only goes on in the middle. What it reports in flight is exactly the
        // writers' admissions still held then, and nobody is admitted after it.
        let gate = WriteGate::new(false);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..4)
            .map(|_| {
                let (gate, stop) = (gate.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut held = Vec::new();
                    let mut refused_after = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        match gate.admit() {
                            Some(a) => {
                                assert!(refused_after == 0, "admitted after a refusal");
                                held.push(a);
                            }
                            None => refused_after += 1,
                        }
                    }
                    held.len() as u64
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(5));
        let in_flight = gate.set_read_only(true);
        stop.store(true, Ordering::SeqCst);
        let held: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
        assert_eq!(in_flight, held);
        assert_eq!(gate.in_flight(), 0, "every admission was given back");
    }
}

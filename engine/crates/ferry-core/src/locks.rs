//! Per-row locks: a transaction locks every (table, key) it touches, in sorted order, until it has committed.
//!
//! Because a transaction's whole key set is known before it starts, locking in one global order means two
//! transactions can never deadlock; conflicting ones simply serialise. Whether a transaction had to wait is
//! recorded (the GTID event's `WAITED` flag) for the replica's scheduler.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

/// A locked row: (table, key).
pub type RowKey = (String, String);

/// Shards of the lock table; a key always maps to the same shard.
const LOCK_SHARDS: usize = 64;

#[derive(Default)]
struct Shard {
    held: Mutex<HashSet<RowKey>>,
    released: Condvar,
}

#[derive(Clone)]
pub struct RowLocks {
    shards: Arc<Vec<Shard>>,
}

impl Default for RowLocks {
    fn default() -> Self {
        Self::new()
    }
}

/// Holds a transaction's row locks; dropping it releases them.
pub struct RowLockGuard {
    locks: RowLocks,
    keys: Vec<RowKey>,
    /// Whether any lock was held by another transaction when asked for.
    pub waited: bool,
}

impl RowLocks {
    pub fn new() -> Self {
        RowLocks { shards: Arc::new((0..LOCK_SHARDS).map(|_| Shard::default()).collect()) }
    }

    fn shard(&self, key: &RowKey) -> &Shard {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let h = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(key);
        &self.shards[(h as usize) % LOCK_SHARDS]
    }

    /// Locks every key (duplicates allowed), in sorted order; blocks while another transaction holds one.
    pub fn lock(&self, keys: impl IntoIterator<Item = RowKey>) -> RowLockGuard {
        let sorted: BTreeSet<RowKey> = keys.into_iter().collect();
        let mut waited = false;
        let mut taken = Vec::with_capacity(sorted.len());
        for key in sorted {
            let shard = self.shard(&key);
            let mut held = shard.held.lock();
            while held.contains(&key) {
                waited = true;
                shard.released.wait(&mut held);
            }
            held.insert(key.clone());
            taken.push(key);
        }
        RowLockGuard { locks: self.clone(), keys: taken, waited }
    }
}

impl Drop for RowLockGuard {
    fn drop(&mut self) {
        for key in self.keys.drain(..) {
            let shard = self.locks.shard(&key);
            shard.held.lock().remove(&key);
            shard.released.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn key(k: &str) -> RowKey {
        ("t".into(), k.into())
    }

    #[test]
    fn conflicting_holders_serialise_and_report_the_wait() {
        let locks = RowLocks::new();
        let counter = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (locks, counter) = (locks.clone(), counter.clone());
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        let _g = locks.lock([key("a"), key("b")]);
                        // Non-atomic read-modify-write: only correct if the lock excludes the others.
                        let v = counter.load(Ordering::Relaxed);
                        std::hint::spin_loop();
                        counter.store(v + 1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(counter.load(Ordering::Relaxed), 4000);
    }

    #[test]
    fn opposite_orders_do_not_deadlock_and_duplicates_are_fine() {
        let locks = RowLocks::new();
        let a = {
            let locks = locks.clone();
            std::thread::spawn(move || (0..2000).for_each(|_| drop(locks.lock([key("x"), key("y"), key("x")]))))
        };
        (0..2000).for_each(|_| drop(locks.lock([key("y"), key("x")])));
        a.join().unwrap();
        let g = locks.lock([key("x")]);
        assert!(!g.waited);
    }
}

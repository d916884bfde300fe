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
    /// Wakes blocked threads when a lock of this shard is released…
    released: Condvar,
    /// …and async waiters.
    released_async: tokio::sync::Notify,
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

    /// [`RowLocks::lock`] for async callers: waits without blocking the thread.
    pub async fn lock_async(&self, keys: impl IntoIterator<Item = RowKey>) -> RowLockGuard {
        let sorted: BTreeSet<RowKey> = keys.into_iter().collect();
        let mut guard = RowLockGuard { locks: self.clone(), keys: Vec::with_capacity(sorted.len()), waited: false };
        for key in sorted {
            let shard = self.shard(&key);
            loop {
                // Registered before looking, so a release between the look and the wait is not missed.
                let mut released = std::pin::pin!(shard.released_async.notified());
                released.as_mut().enable();
                {
                    let mut held = shard.held.lock();
                    if !held.contains(&key) {
                        held.insert(key.clone());
                        break;
                    }
                }
                guard.waited = true;
                released.await;
            }
            // Pushed as soon as taken, so a cancelled wait still releases what it holds.
            guard.keys.push(key);
        }
        guard
    }
}

impl Drop for RowLockGuard {
    fn drop(&mut self) {
        for key in self.keys.drain(..) {
            let shard = self.locks.shard(&key);
            shard.held.lock().remove(&key);
            shard.released.notify_all();
            shard.released_async.notify_waiters();
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
    fn async_and_blocking_holders_exclude_each_other() {
        let locks = RowLocks::new();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let held = locks.lock([key("a")]);
        let waiter = {
            let locks = locks.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                rt.block_on(async { locks.lock_async([key("b"), key("a")]).await.waited })
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished(), "the async waiter waits for the blocking holder");
        drop(held);
        assert!(waiter.join().unwrap(), "and says it waited");
        let g = rt.block_on(locks.lock_async([key("a")]));
        assert!(!g.waited);
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

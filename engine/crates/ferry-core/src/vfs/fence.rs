//! The store's redb backend with a fence: once the fence is raised, every write, resize and sync fails, so
//! nothing more reaches the store's file.
//!
//! Closing a redb database makes its pending non-durable commits durable. Below durability `local` those may
//! hold transactions the binlog never fsynced; a store durable past the binlog's end refuses the next start.
//! A node that cannot fsync its binlog before its store closes (its storage failed) raises the fence: the
//! close's writes fail, redb drops the non-durable commits, and the restart replays them from the binlog.

use std::io;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use redb::{BackendError, StorageBackend};

/// Raises the fence of one [`FencedBackend`].
#[derive(Debug, Clone, Default)]
pub struct Fence(Arc<AtomicBool>);

impl Fence {
    /// From now on the backend writes nothing.
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    fn check(&self) -> io::Result<()> {
        if self.is_raised() {
            Err(io::Error::other("the store is fenced: its storage failed, nothing more is written to it"))
        } else {
            Ok(())
        }
    }
}

/// A backend that passes everything to `inner` until its [`Fence`] is raised.
#[derive(Debug)]
pub struct FencedBackend {
    inner: Box<dyn StorageBackend>,
    fence: Fence,
}

impl FencedBackend {
    pub fn new(inner: Box<dyn StorageBackend>) -> (Self, Fence) {
        let fence = Fence::default();
        (FencedBackend { inner, fence: fence.clone() }, fence)
    }
}

impl StorageBackend for FencedBackend {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.fence.check()?;
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.fence.check()?;
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.fence.check()?;
        self.inner.write(offset, data)
    }

    fn close(&self) -> io::Result<()> {
        self.inner.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}

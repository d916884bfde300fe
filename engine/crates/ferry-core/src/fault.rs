//! Fail-stop on storage errors: the node's storage health (set once, by the first failed write, fsync or store
//! flush, never cleared until restart) and the failpoints that inject such errors in tests.
//!
//! After a failed fsync the kernel may have dropped the dirty pages it could not write, and a retried fsync can
//! succeed without them (PostgreSQL's "fsyncgate"): nothing written after a failure can be trusted to be durable,
//! so nothing is acknowledged from then on. Restarting the node recovers from what is really on disk.
//!
//! Failpoints (the `fail` crate) exist only with the `failpoints` feature; without it [`injected`] is a constant
//! `None` and compiles away. Each I/O site has a name in [`sites`]; a test configures one with an action
//! `return(eio)`, `return(enospc)` or `return(short)` (a short write: half the bytes land, then ENOSPC). A site
//! checked by [`delay`] is held up instead (`sleep(ms)`).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

/// The failpoint names, one per I/O site.
pub mod sites {
    /// A commit group's (or a checkpoint or rotate event's) write to the binlog.
    pub const BINLOG_WRITE: &str = "binlog-write";
    /// A commit group's fsync of the binlog.
    pub const BINLOG_FSYNC: &str = "binlog-fsync";
    /// A new binlog file's header write and fsync (rotation).
    pub const BINLOG_HEADER: &str = "binlog-header";
    /// The binlog index rewrite (rotation, purge).
    pub const BINLOG_INDEX: &str = "binlog-index";
    /// A store flush or checkpoint (the redb commit).
    pub const STORE_FLUSH: &str = "store-flush";
    /// The replica state (gtid_slave_pos) written by CHANGE MASTER.
    pub const REPLICA_STATE: &str = "replica-state";
    /// A relay log write by a replication connection's IO side.
    pub const RELAY_WRITE: &str = "relay-write";
    /// The seq_no high-water mark file.
    pub const SEQ_NO_HWM: &str = "seq-no-hwm";
    /// A rewind's archive of the transactions it cuts (written before anything else changes).
    pub const REWIND_ARCHIVE: &str = "rewind-archive";
    /// A rewind's intent record.
    pub const REWIND_INTENT: &str = "rewind-intent";
    /// A rewind's cut of the binlog file holding the cut.
    pub const REWIND_TRUNCATE: &str = "rewind-truncate";

    /// Not an I/O site: where a master's binlog stream finds its start, held up by a test (`sleep(ms)`, through
    /// [`super::delay`]) as a long binlog's read holds it up.
    pub const DUMP_SEEK: &str = "dump-seek";

    /// Every I/O site, for tests that go through all of them.
    pub const ALL: [&str; 11] = [
        BINLOG_WRITE,
        BINLOG_FSYNC,
        BINLOG_HEADER,
        BINLOG_INDEX,
        STORE_FLUSH,
        REPLICA_STATE,
        RELAY_WRITE,
        SEQ_NO_HWM,
        REWIND_ARCHIVE,
        REWIND_INTENT,
        REWIND_TRUNCATE,
    ];
}

/// An injected I/O fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// EIO.
    Io,
    /// ENOSPC.
    NoSpace,
    /// Half of the bytes are written, then ENOSPC.
    Short,
}

impl Fault {
    /// The error the faulty call returns.
    pub fn error(self, site: &str) -> io::Error {
        let errno = match self {
            Fault::Io => 5,
            Fault::NoSpace | Fault::Short => 28,
        };
        let os = io::Error::from_raw_os_error(errno);
        io::Error::new(os.kind(), format!("{os} (injected at {site})"))
    }
}

/// The fault configured at `site`, if any (always None without the `failpoints` feature).
#[cfg(feature = "failpoints")]
pub fn injected(site: &str) -> Option<Fault> {
    fail::eval(site, |arg| match arg.as_deref() {
        Some("enospc") => Fault::NoSpace,
        Some("short") => Fault::Short,
        _ => Fault::Io,
    })
}

/// The fault configured at `site`, if any (always None without the `failpoints` feature).
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn injected(_site: &str) -> Option<Fault> {
    None
}

/// Holds the caller up at `site` when a test configures it so (`FAILPOINTS=site=sleep(ms)`); nothing without the
/// `failpoints` feature.
#[cfg(feature = "failpoints")]
pub fn delay(site: &str) {
    fail::eval(site, |_| ());
}

/// Holds the caller up at `site` when a test configures it so (`FAILPOINTS=site=sleep(ms)`); nothing without the
/// `failpoints` feature.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn delay(_site: &str) {}

/// `write_all` with the failpoint `site` in front of it.
pub fn write_all(out: &mut impl io::Write, bytes: &[u8], site: &str) -> io::Result<()> {
    match injected(site) {
        None => out.write_all(bytes),
        Some(Fault::Short) => {
            out.write_all(&bytes[..bytes.len() / 2])?;
            Err(Fault::Short.error(site))
        }
        Some(fault) => Err(fault.error(site)),
    }
}

/// Fails with the fault configured at `site` (for fsyncs and other calls with no bytes to cut short).
pub fn check(site: &str) -> io::Result<()> {
    match injected(site) {
        None => Ok(()),
        Some(fault) => Err(fault.error(site)),
    }
}

/// The node's storage health: healthy until the first failed write, fsync or flush, failed for good after it.
#[derive(Debug, Default)]
pub struct StorageHealth {
    /// Read on every admission, without a lock.
    failed: AtomicBool,
    /// What failed first (later failures are only logged).
    why: Mutex<Option<String>>,
}

impl StorageHealth {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a storage failure (the first one is kept); returns the message that refusals carry.
    pub fn fail(&self, why: impl Into<String>) -> String {
        let why = why.into();
        let mut first = self.why.lock();
        if first.is_none() {
            tracing::error!(
                "storage failed, the node is read-only and acknowledges nothing from now on (restart it once the \
                 storage is fixed): {why}"
            );
            *first = Some(why);
            self.failed.store(true, Ordering::SeqCst);
        } else {
            tracing::error!("storage failed again: {why}");
        }
        first.clone().expect("set above")
    }

    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// The first failure, when there was one.
    pub fn failure(&self) -> Option<String> {
        if !self.is_failed() {
            return None;
        }
        self.why.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_is_kept() {
        let health = StorageHealth::new();
        assert!(!health.is_failed());
        assert_eq!(health.failure(), None);
        assert_eq!(health.fail("binlog fsync: EIO"), "binlog fsync: EIO");
        assert_eq!(health.fail("store flush: ENOSPC"), "binlog fsync: EIO");
        assert!(health.is_failed());
        assert_eq!(health.failure().as_deref(), Some("binlog fsync: EIO"));
    }

    #[test]
    fn without_a_configured_failpoint_writes_go_through() {
        let mut out = Vec::new();
        write_all(&mut out, b"abc", sites::BINLOG_WRITE).unwrap();
        check(sites::BINLOG_FSYNC).unwrap();
        assert_eq!(out, b"abc");
        assert!(Fault::NoSpace.error("x").to_string().contains("injected at x"));
    }
}

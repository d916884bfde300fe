//! What a connection's IO side, SQL side and manager share: the status, the relay log's written end (with a
//! condition the SQL side waits on), the stop signal, and a parallel apply change for the SQL side's next batch.

use std::sync::{Arc, Weak};
use std::time::Duration;

use ferry_core::binlog::writer::now_us;
use ferry_core::binlog::BinlogCoord;
use ferry_core::relay::RelaySpace;
use parking_lot::{Condvar, Mutex};
use tokio::sync::watch;

use super::applier::ParallelConfig;
use super::status::{ConnectionStatus, IoState, ReplError, SqlState};
use super::Replication;

pub struct Shared {
    pub name: String,
    pub status: Mutex<ConnectionStatus>,
    /// What the relay log's files take on disk (raised by the IO side, lowered by the SQL side's purges).
    pub relay_space: Arc<RelaySpace>,
    /// Where the relay log's last complete transaction ends (None before the first one).
    relay_end: Mutex<Option<BinlogCoord>>,
    relay_grew: Condvar,
    stop: watch::Sender<bool>,
    /// Set while the SQL side must not apply (started with `sql_paused`).
    sql_paused: std::sync::atomic::AtomicBool,
    /// Told when the connection stops by itself (error or UNTIL reached), so it is not restarted.
    manager: Weak<Replication>,
    /// Parallel apply settings the SQL side takes before its next batch (set online, see
    /// [`Replication::set_parallel`](super::Replication::set_parallel)).
    parallel_change: Mutex<Option<ParallelConfig>>,
}

impl Shared {
    pub fn new(name: &str, status: ConnectionStatus, manager: Weak<Replication>) -> Self {
        Shared {
            name: name.to_string(),
            status: Mutex::new(status),
            relay_space: Arc::new(RelaySpace::default()),
            relay_end: Mutex::new(None),
            relay_grew: Condvar::new(),
            stop: watch::channel(false).0,
            sql_paused: std::sync::atomic::AtomicBool::new(false),
            manager,
            parallel_change: Mutex::new(None),
        }
    }

    /// The SQL side applies with `parallel` from its next batch on (a batch is committed as one group, so between
    /// two batches nothing is in flight: the change skips and repeats nothing).
    pub fn change_parallel(&self, parallel: ParallelConfig) {
        *self.parallel_change.lock() = Some(parallel);
    }

    /// The change asked since the SQL side last looked, once.
    pub fn take_parallel_change(&self) -> Option<ParallelConfig> {
        self.parallel_change.lock().take()
    }

    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    pub fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// Asks both sides to stop.
    pub fn request_stop(&self) {
        self.stop.send_replace(true);
        let _guard = self.relay_end.lock();
        self.relay_grew.notify_all();
    }

    pub fn set_sql_paused(&self, paused: bool) {
        self.sql_paused.store(paused, std::sync::atomic::Ordering::SeqCst);
        let _guard = self.relay_end.lock();
        self.relay_grew.notify_all();
    }

    pub fn sql_paused(&self) -> bool {
        self.sql_paused.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The IO side wrote a transaction up to `end`.
    pub fn relay_written(&self, end: BinlogCoord) {
        *self.relay_end.lock() = Some(end);
        self.relay_grew.notify_all();
    }

    /// Where the relay log's last complete transaction ends now.
    pub fn relay_end(&self) -> Option<BinlogCoord> {
        *self.relay_end.lock()
    }

    /// The SQL side waits (at most `timeout`) for the relay log to end past `read`.
    pub fn wait_for_relay(&self, read: BinlogCoord, timeout: Duration) -> Option<BinlogCoord> {
        let mut end = self.relay_end.lock();
        if end.is_none_or(|e| e <= read) && !self.stopping() {
            self.relay_grew.wait_for(&mut end, timeout);
        }
        *end
    }

    /// Stops the connection because of an error that retrying cannot fix; it stays stopped until started.
    /// The connection stops on an error of its `side` ("io" or "sql"): that side's state and the last error change
    /// together, so no status shows the error state without its error.
    pub fn fail(&self, side: &'static str, code: &str, message: String) {
        tracing::error!(connection = %self.name, side, code, "replication stopped: {message}");
        {
            let mut status = self.status.lock();
            match side {
                "io" => status.io_state = IoState::Error,
                "sql" => status.sql_state = SqlState::Error,
                other => unreachable!("no replication side {other:?}"),
            }
            status.last_error = Some(ReplError { side, code: code.to_string(), message, at_us: now_us() });
        }
        self.stopped_by_itself();
    }

    /// The connection ended on its own (error, or UNTIL reached).
    pub fn stopped_by_itself(&self) {
        self.request_stop();
        if let Some(manager) = self.manager.upgrade() {
            manager.ended_by_itself(&self.name);
        }
    }
}

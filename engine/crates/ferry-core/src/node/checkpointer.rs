//! Checkpoints: the store made durable (on demand, periodically by the checkpointer thread, at stop) and what a
//! node's close must not make durable.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Node, NodeError};
use crate::binlog::BinlogCoord;
use crate::commit::CommitError;

/// Rows held in memory before a checkpoint is taken early (bounds memory and replay time).
const UNFLUSHED_ROWS_MAX: usize = 200_000;
/// How often the checkpointer looks at the clock and the in-memory row count.
const CHECKPOINT_POLL: Duration = Duration::from_millis(50);

impl Node {
    /// Makes the store durable and logs a checkpoint event. The store is frozen under the binlog lock, but
    /// written to disk outside it, so commits go on during the checkpoint's fsync.
    pub fn checkpoint(&self) -> Result<Option<BinlogCoord>, NodeError> {
        let durability = self.config.commit.durability;
        let flush = self.commit.with_log(|log| -> Result<_, CommitError> {
            log.sync_for_checkpoint(durability)?;
            Ok(self.store.begin_flush())
        })?;
        let (through, _) = flush.write(true)?;
        self.commit.with_log(|log| log.record_checkpoint(through))?;
        Ok(through)
    }

    /// Starts the periodic checkpointer; it ends when [`Node::stop`] is called.
    pub fn start_checkpointer(self: &Arc<Self>) -> std::thread::JoinHandle<()> {
        let node = Arc::clone(self);
        std::thread::Builder::new()
            .name("checkpointer".into())
            .spawn(move || {
                let interval = node.config.checkpoint_interval;
                let mut last = (Instant::now(), node.counters.snapshot().commits);
                while !node.stopping.load(Ordering::SeqCst) {
                    std::thread::park_timeout(CHECKPOINT_POLL.min(interval));
                    if node.health.is_failed() {
                        continue;
                    }
                    let commits = node.counters.snapshot().commits;
                    let due = last.0.elapsed() >= interval && commits != last.1;
                    if due || node.store.unflushed_rows() > UNFLUSHED_ROWS_MAX {
                        if let Err(e) = node.checkpoint() {
                            tracing::error!("checkpoint failed: {e}");
                        }
                        last = (Instant::now(), commits);
                    }
                }
            })
            .expect("spawn checkpointer")
    }

    /// Stops background work and makes the store durable (a clean shutdown needs no replay); brings the seq_no
    /// high-water mark down to what was used, so a clean restart leaves no gap.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        if self.health.is_failed() {
            tracing::error!("storage failed earlier: no final checkpoint; the restart replays the binlog");
            return;
        }
        if let Err(e) = self.checkpoint() {
            tracing::error!("final checkpoint failed: {e}");
        }
        let settled = self.commit.with_log(|log| {
            let used = log.binlog.state().position().iter().map(|g| (g.domain, g.seq)).collect();
            log.settle_reservation(used)
        });
        if let Err(e) = settled {
            tracing::error!("{e}");
        }
    }
}

impl Drop for Node {
    /// The store's close makes its pending non-durable flushes durable. Below durability `local` those may
    /// hold commits the binlog has not fsynced: fsync it first, or, when that cannot be done (the storage
    /// failed), fence the store so that the close writes nothing and the restart replays them from the binlog.
    fn drop(&mut self) {
        let durability = self.config.commit.durability;
        if durability.fsyncs() {
            return;
        }
        let synced =
            !self.health.is_failed() && self.commit.with_log(|log| log.sync_for_checkpoint(durability)).is_ok();
        if !synced {
            self.store.fence();
        }
    }
}

//! Automatic binlog expiry (`--binlog-expire-logs-seconds`, `--binlog-total-bytes-max`): a task that looks once
//! per [`EXPIRY_POLL`] and deletes the oldest files that are due, never one a connected replica still reads.
//! When a replica holds files back it says so: in the status (`binlog_expiry.held_back`), in a metric, and in a
//! log line naming the replica and the file (once per change).

use std::sync::Arc;
use std::time::Duration;

use ferry_core::binlog::expiry::{ExpiryPolicy, HeldBack};
use ferry_core::node::Node;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::watch;

use crate::replicas::ReplicaRegistry;

/// How often expiry looks at the binlog files.
pub const EXPIRY_POLL: Duration = Duration::from_millis(500);

/// What expiry did and what holds it back, as the status shows it.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct ExpiryStatus {
    pub expire_logs_seconds: u64,
    pub total_bytes_max: u64,
    /// The first due file kept because a connected replica still reads it (null when nothing is held back).
    pub held_back: Option<HeldBack>,
    /// Files deleted by expiry since the node started, and the last ones.
    pub files_expired: u64,
    pub last_expired: Vec<String>,
    /// The last failure to expire (a storage error), if the last look failed.
    pub last_error: Option<String>,
}

pub struct Expiry {
    pub policy: ExpiryPolicy,
    status: Mutex<ExpiryStatus>,
}

impl Expiry {
    pub fn new(policy: ExpiryPolicy) -> Self {
        let status = ExpiryStatus {
            expire_logs_seconds: policy.expire_logs_seconds,
            total_bytes_max: policy.total_bytes_max,
            ..ExpiryStatus::default()
        };
        Expiry { policy, status: Mutex::new(status) }
    }

    pub fn status(&self) -> ExpiryStatus {
        self.status.lock().clone()
    }

    /// One look: purges what is due and records what held files back.
    pub fn run_once(&self, node: &Node, replicas: &ReplicaRegistry) {
        if self.policy.is_off() || node.storage_failure().is_some() {
            return;
        }
        let result = node.expire_logs(self.policy, &replicas.readers());
        let mut status = self.status.lock();
        match result {
            Ok(plan) => {
                status.last_error = None;
                if !plan.purge.is_empty() {
                    tracing::info!(files = ?plan.purge, "binlog expiry purged files");
                    status.files_expired += plan.purge.len() as u64;
                    status.last_expired = plan.purge;
                }
                if plan.held_back != status.held_back {
                    match &plan.held_back {
                        Some(h) => tracing::warn!(
                            file = %h.file, replica = %h.replica,
                            "binlog expiry held back: {} is due but the connected replica {} still reads it",
                            h.file, h.replica
                        ),
                        None => tracing::info!("binlog expiry no longer held back by a replica"),
                    }
                    status.held_back = plan.held_back;
                }
            }
            Err(e) => {
                tracing::error!("binlog expiry failed: {e}");
                status.last_error = Some(e.to_string());
            }
        }
    }
}

/// Runs expiry until `stop`.
pub async fn run(
    expiry: Arc<Expiry>,
    node: Arc<Node>,
    replicas: Arc<ReplicaRegistry>,
    mut stop: watch::Receiver<bool>,
) {
    if expiry.policy.is_off() {
        return;
    }
    loop {
        {
            let (expiry, node, replicas) = (expiry.clone(), node.clone(), replicas.clone());
            let _ = tokio::task::spawn_blocking(move || expiry.run_once(&node, &replicas)).await;
        }
        tokio::select! {
            _ = tokio::time::sleep(EXPIRY_POLL) => {}
            _ = stop.changed() => return,
        }
    }
}

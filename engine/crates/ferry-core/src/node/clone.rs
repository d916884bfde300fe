//! A clone's install on the recipient: the staging store a clone filled (and verified) replaces the node's store,
//! the binlog starts again empty with the clone's position as its GTID state, and gtid_slave_pos is that position,
//! so replication from the donor's source continues exactly after it.
//!
//! Done on the running node with the binlog lock held, on a quiesced node only (read-only, no commit in flight;
//! the caller refuses replication and readers). Crash-safe: the staging store durable, then the intent
//! (`clone.json` in the binlog directory, fsynced), then the binlog (files deleted, the new first file), then the
//! store (one durable redb commit naming the clone), then the intent goes and the staging file with it. A start
//! finding the intent completes the install ([`complete_at_open`]); a failure after the intent is fail-stop.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Node, NodeConfig, NodeError};
use crate::binlog::writer::BinlogWriter;
use crate::binlog::{hwm, intent, BinlogError};
use crate::gtid::{BinlogState, GtidPosition};
use crate::store::Store;

/// The intent file's name, in the binlog directory.
pub const CLONE_INTENT_FILE: &str = "clone.json";

/// What an install in progress is to end with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloneIntent {
    pub clone_id: String,
    /// The clone's GTID position (text).
    pub position: String,
    /// The staging store's file name, in the data directory.
    pub staging: String,
}

/// Why an install did nothing.
#[derive(Debug, thiserror::Error)]
pub enum CloneInstallError {
    /// The node is not quiesced (writable, commits in flight, replication or readers) or has failed.
    #[error("{0}")]
    NotQuiesced(String),
    #[error(transparent)]
    Node(#[from] NodeError),
}

fn intent_path(binlog_dir: &Path) -> PathBuf {
    binlog_dir.join(CLONE_INTENT_FILE)
}

impl Node {
    /// Installs the clone staged at `staging` (a file name in the data directory, durable and verified) at
    /// `position`; see the module's documentation. `quiesced` is asked again with the binlog lock held.
    pub fn install_clone(
        &self,
        staging: &str,
        clone_id: &str,
        position: &GtidPosition,
        quiesced: &dyn Fn() -> Option<String>,
    ) -> Result<(), CloneInstallError> {
        if let Some(why) = self.health.failure() {
            return Err(CloneInstallError::NotQuiesced(format!("the node's storage failed ({why}): restart it first")));
        }
        if !self.is_read_only() {
            return Err(CloneInstallError::NotQuiesced("the node takes client writes: it must be read-only".into()));
        }
        let durability = self.config.commit.durability;
        self.commit.with_log(|log| -> Result<(), CloneInstallError> {
            if let Some(why) = quiesced() {
                return Err(CloneInstallError::NotQuiesced(why));
            }
            let in_flight = self.commits_in_flight();
            if in_flight > 0 {
                return Err(CloneInstallError::NotQuiesced(format!(
                    "{in_flight} client commit(s) have no answer yet: wait for them"
                )));
            }
            log.checkpoint(durability).map_err(NodeError::from)?;
            let fs = log.binlog.fs().clone();
            let dir = log.binlog.dir().to_path_buf();
            let intent = CloneIntent {
                clone_id: clone_id.to_string(),
                position: position.to_string(),
                staging: staging.to_string(),
            };
            intent::write(&*fs, &dir, &intent_path(&dir), &intent, None).map_err(NodeError::from)?;
            // From here a failure leaves the intent: the node stops acknowledging, and its restart completes it.
            let binlog = match complete(&self.config, &self.store, &intent) {
                Ok(binlog) => binlog,
                Err(e) => {
                    let why = self.health.fail(format!("clone install: {e}"));
                    return Err(CloneInstallError::Node(NodeError::Recovery(why)));
                }
            };
            log.binlog = binlog;
            log.durable_through = Some(log.binlog.coord());
            *self.slave_pos.lock() = position.clone();
            *self.watch.position.lock() = position.clone();
            *self.watch.end.lock() = log.binlog.coord();
            self.recent.lock().clear();
            self.commit.reset_counters(position);
            Ok(())
        })?;
        tracing::warn!(clone_id, %position, "clone installed: the store is the donor's snapshot, the binlog starts at its position");
        self.watch.moved.notify_all();
        self.watch.moved_async.notify_waiters();
        Ok(())
    }
}

/// Completes an install whose intent is written: the binlog started again with the position as its state, the
/// store replaced from the staging store (unless done), the intent cleared, the staging file removed. Each step
/// may be done again. Returns the new binlog.
fn complete(config: &NodeConfig, store: &Store, intent: &CloneIntent) -> Result<BinlogWriter, NodeError> {
    let fs = config.fs.clone();
    let dir = config.data_dir.join("binlog");
    let position: GtidPosition = intent
        .position
        .parse()
        .map_err(|e| NodeError::Recovery(format!("the clone intent's position does not parse: {e}")))?;
    // The position's seq_nos are used: a GTID handed out here later goes above them.
    hwm::raise_on(&*fs, &dir, position.iter())?;
    let binlog = BinlogWriter::start_fresh_with_state(
        fs.clone(),
        &dir,
        config.server_id,
        config.binlog_file_bytes_max,
        1,
        BinlogState::from_gtids(position.iter()),
    )?;
    let staging_path = config.data_dir.join(&intent.staging);
    if store.cloned_by()?.as_deref() != Some(intent.clone_id.as_str()) {
        if !fs.exists(&staging_path) {
            return Err(NodeError::Recovery(format!(
                "the clone {} is to be installed from {}, which is missing",
                intent.clone_id,
                staging_path.display()
            )));
        }
        let staging = Store::open(&staging_path)?;
        store.install_clone(&staging, binlog.coord(), &position, &intent.clone_id)?;
    }
    intent::clear(&*fs, &dir, &intent_path(&dir))?;
    match fs.remove_file(&staging_path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(BinlogError::io(&staging_path, e).into()),
    }
    Ok(binlog)
}

/// At open, before the binlog is: an install a crash interrupted is completed.
pub(super) fn complete_at_open(config: &NodeConfig, store: &Store, binlog_dir: &Path) -> Result<(), NodeError> {
    let Some(intent) = intent::read::<CloneIntent>(&*config.fs, &intent_path(binlog_dir), "clone install")? else {
        return Ok(());
    };
    tracing::warn!(clone_id = %intent.clone_id, position = %intent.position, "completing a clone install a crash interrupted");
    complete(config, store, &intent).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::TxnRequest;
    use crate::row::{row_bytes, RowOp, Value};

    fn increment(key: &str) -> TxnRequest {
        TxnRequest {
            ops: vec![RowOp::Increment { table: "old".into(), key: key.into(), field: "n".into(), by: 1 }],
            ..Default::default()
        }
    }

    /// A staging store in `data_dir` holding `rows` of table `t`, durable; its checksums.
    fn stage(data_dir: &Path, rows: i64) -> std::collections::BTreeMap<String, crate::store::TableChecksum> {
        let staging = Store::open(&data_dir.join("clone-staging.redb")).unwrap();
        let rows: Vec<(String, Vec<u8>)> =
            (0..rows).map(|i| (format!("k{i:03}"), row_bytes(&[("n".to_string(), Value::Int(i))].into()))).collect();
        staging.stage_rows("t", &rows, b"{}").unwrap();
        staging.stage_durable().unwrap();
        staging.checksums().unwrap()
    }

    /// An install a crash interrupted — after the intent, before anything else; or after everything but the
    /// intent's removal — is completed at the next open: the store is the staging store's, the binlog is empty at
    /// the position, gtid_slave_pos is the position, the intent and the staging file are gone.
    #[test]
    fn an_interrupted_install_is_completed_at_open_either_way() {
        for done_before_crash in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let config = NodeConfig::new(3, dir.path());
            let node = Node::open(config.clone(), None).unwrap();
            for key in ["a", "b", "a"] {
                node.execute(increment(key), false).unwrap();
            }
            node.set_read_only(true);
            let sums = stage(dir.path(), 20);
            let position: GtidPosition = "0-1-40,2-5-7".parse().unwrap();
            let binlog_dir = dir.path().join("binlog");
            let intent = CloneIntent {
                clone_id: "c3-1".into(),
                position: position.to_string(),
                staging: "clone-staging.redb".into(),
            };
            if done_before_crash {
                node.install_clone("clone-staging.redb", "c3-1", &position, &|| None).unwrap();
                std::fs::write(intent_path(&binlog_dir), serde_json::to_vec(&intent).unwrap()).unwrap();
            } else {
                std::fs::write(intent_path(&binlog_dir), serde_json::to_vec(&intent).unwrap()).unwrap();
            }
            node.stop();
            drop(node);
            let node = Node::open(config, None).unwrap();
            let status = node.status();
            assert_eq!(status.gtid_binlog_pos, position.to_string(), "done before the crash: {done_before_crash}");
            assert_eq!(status.gtid_slave_pos, position.to_string());
            assert_eq!(node.checksums().unwrap().1, sums, "the store is the staging store's");
            assert_eq!(node.read_row("old", "a").unwrap(), None, "nothing of the old store is left");
            assert!(!intent_path(&binlog_dir).exists() && !dir.path().join("clone-staging.redb").exists());
            let next = node.execute(TxnRequest { domain: Some(2), ..increment("c") }, false).unwrap();
            assert_eq!(next.gtid.seq, 8, "seq_nos continue above the position");
        }
    }
}

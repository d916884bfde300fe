//! The master's list of connected replicas (each dump stream registers itself), for status and for topology
//! discovery by the control plane.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use ferry_core::binlog::expiry::ReaderNeed;
use ferry_core::binlog::file_seq;
use ferry_core::gtid::{Gtid, GtidPosition};
use parking_lot::Mutex;
use serde::Serialize;

/// One connected replica as the master sees it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ReplicaInfo {
    pub server_id: u32,
    /// Address the replica connected from.
    pub address: String,
    /// The replica's own protocol and admin addresses, as it advertises them (empty when it does not).
    pub listen: String,
    pub admin: String,
    /// The position it asked to start from.
    pub start_position: String,
    /// Newest GTID per domain sent to it.
    pub sent_position: String,
    /// Master binlog coordinate of the last transaction sent.
    pub sent_file: String,
    pub sent_offset: u64,
    /// The binlog file its stream reads now: that file and every later one are kept from purges and expiry.
    pub reading_file: String,
    pub connected_at_us: u64,
    pub transactions_sent: u64,
    /// Bytes of binlog read for this replica and not yet written to its socket (at most about
    /// `--dump-buffer-bytes-max`), and the most it held at once.
    pub buffered_bytes: u64,
    pub buffered_bytes_peak: u64,
}

#[derive(Default)]
pub struct ReplicaRegistry {
    next_id: AtomicU64,
    replicas: Mutex<BTreeMap<u64, (ReplicaInfo, GtidPosition)>>,
    /// The most bytes any one replica's stream held at once since the node started.
    buffered_bytes_peak: AtomicU64,
}

/// Keeps a replica listed while its dump stream lives.
pub struct Registration<'a> {
    registry: &'a ReplicaRegistry,
    id: u64,
}

impl ReplicaRegistry {
    pub fn register(&self, info: ReplicaInfo, start: GtidPosition) -> Registration<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.replicas.lock().insert(id, (info, start));
        Registration { registry: self, id }
    }

    pub fn list(&self) -> Vec<ReplicaInfo> {
        self.replicas.lock().values().map(|(info, _)| info.clone()).collect()
    }

    /// The file each connected replica's stream reads now, for the purge guard.
    pub fn readers(&self) -> Vec<ReaderNeed> {
        self.replicas
            .lock()
            .values()
            .filter_map(|(info, _)| {
                Some(ReaderNeed {
                    replica: format!("server_id {} at {}", info.server_id, info.address),
                    file_seq: file_seq(&info.reading_file)?,
                })
            })
            .collect()
    }

    /// Bytes the connected replicas' streams hold now, all together.
    pub fn buffered_bytes(&self) -> u64 {
        self.replicas.lock().values().map(|(info, _)| info.buffered_bytes).sum()
    }

    /// The most bytes one replica's stream held at once since the node started.
    pub fn buffered_bytes_peak(&self) -> u64 {
        self.buffered_bytes_peak.load(Ordering::Relaxed)
    }
}

impl Registration<'_> {
    /// A number identifying this replica's stream while it lives.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A batch of `bytes` was read for the replica (what it held before is sent).
    pub fn buffered(&self, bytes: u64) {
        if let Some((info, _)) = self.registry.replicas.lock().get_mut(&self.id) {
            info.buffered_bytes = bytes;
            info.buffered_bytes_peak = info.buffered_bytes_peak.max(bytes);
        }
        self.registry.buffered_bytes_peak.fetch_max(bytes, Ordering::Relaxed);
    }

    /// The stream moved on to another binlog file.
    pub fn reading(&self, file: &str) {
        if let Some((info, _)) = self.registry.replicas.lock().get_mut(&self.id) {
            if info.reading_file != file {
                info.reading_file = file.to_string();
            }
        }
    }

    /// Records a transaction of `bytes` sent (written to the socket: no longer buffered).
    pub fn sent(&self, gtid: Gtid, file: &str, offset: u64, bytes: u64) {
        if let Some((info, pos)) = self.registry.replicas.lock().get_mut(&self.id) {
            pos.set(gtid);
            info.sent_position = pos.to_string();
            info.sent_file = file.to_string();
            info.sent_offset = offset;
            info.transactions_sent += 1;
            info.buffered_bytes = info.buffered_bytes.saturating_sub(bytes);
        }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.registry.replicas.lock().remove(&self.id);
    }
}

//! What streams from or into this node that a DBA command changing its history or its whole data (a rewind, a
//! clone) must not run under: a running replication connection, connected replicas, change consumers.

use std::sync::Arc;

use ferry_core::gtid::GtidPosition;

use crate::consumers::ConsumerRegistry;
use crate::replicas::ReplicaRegistry;
use crate::replication::Replication;

/// The parts of the server that stream from or into the node.
#[derive(Clone)]
pub struct Streams {
    pub replication: Arc<Replication>,
    pub replicas: Arc<ReplicaRegistry>,
    pub consumers: Arc<ConsumerRegistry>,
}

impl Streams {
    /// The first of them that streams now (its error code and a message naming it and `what` it stands in the
    /// way of: "a rewind"), None when quiesced. Takes no lock of the node's binlog (it may run under it) and
    /// reads no binlog position.
    pub fn busy(&self, what: &str) -> Option<(&'static str, String)> {
        if let Some(c) = self.replication.status().into_iter().find(|c| c.running) {
            let why =
                format!("replication connection {:?} (from {}) is running: stop it before {what}", c.name, c.master);
            return Some(("replication_running", why));
        }
        let replicas = self.replicas.list();
        if let Some(r) = replicas.first() {
            let why = format!(
                "{} replica(s) stream from this node (server_id {} at {} among them): they may hold transactions \
                 {what} changes; stop or repoint them first",
                replicas.len(),
                r.server_id,
                r.address
            );
            return Some(("replicas_connected", why));
        }
        let consumers = self.consumers.list(&GtidPosition::new(), 0);
        if let Some(c) = consumers.first() {
            let why = format!(
                "{} change consumer(s) stream from this node ({:?} at {} among them): they would see history change \
                 under them; stop them first",
                consumers.len(),
                c.info.name,
                c.info.address
            );
            return Some(("consumers_connected", why));
        }
        None
    }
}

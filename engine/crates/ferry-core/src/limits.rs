//! Named limits on everything a client can make the node hold: each enforced, each with a clear error past it.

use crate::binlog::event::MAX_EVENT_BYTES;

/// Limits of one node; defaults suit a small deployment and can be raised on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Limits {
    /// Largest protocol frame accepted (header and body).
    pub frame_bytes_max: usize,
    /// Most row operations in one transaction.
    pub txn_ops_max: usize,
    /// Largest transaction, counted as the encoded size of its row images.
    pub txn_bytes_max: usize,
    /// Most client connections served at once; further ones are refused with an error frame.
    pub connections_max: usize,
    /// Longest table or field name, in bytes.
    pub name_bytes_max: usize,
    /// Longest primary key, in bytes.
    pub key_bytes_max: usize,
    /// Longest wait-for-position a client may ask for.
    pub wait_ms_max: u64,
    /// Largest binlog event body a client transaction may produce (its `Rows` event), checked before the
    /// transaction joins the commit queue. At most [`MAX_EVENT_BYTES`], the format's own bound, which every
    /// reader enforces: a node never writes an event its replicas or its own recovery would refuse to read.
    pub event_bytes_max: usize,
}

impl Limits {
    /// Refuses settings the node cannot honour.
    pub fn check(&self) -> Result<(), String> {
        if self.event_bytes_max == 0 || self.event_bytes_max > MAX_EVENT_BYTES {
            return Err(format!(
                "event_bytes_max {} must be between 1 and {MAX_EVENT_BYTES} (the binlog format's largest event)",
                self.event_bytes_max
            ));
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            frame_bytes_max: 4 << 20,
            txn_ops_max: 10_000,
            txn_bytes_max: 2 << 20,
            connections_max: 1024,
            name_bytes_max: 64,
            key_bytes_max: 1024,
            wait_ms_max: 300_000,
            event_bytes_max: MAX_EVENT_BYTES,
        }
    }
}

//! Named limits on everything a client can make the node hold: each enforced, each with a clear error past it.

use crate::binlog::event::MAX_EVENT_BYTES;

/// Smallest value of the byte bounds on buffers and relay space (a relay file's header is 4 bytes; anything
/// this small only throttles to one transaction at a time).
pub const BOUND_BYTES_MIN: u64 = 4096;

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
    /// Bytes of binlog a master's dump stream holds in memory for one replica: reading ahead stops when the
    /// bytes read and not yet written to the replica's socket reach it, and resumes as the replica drains. A
    /// transaction is never split, so the buffer passes the bound by less than one transaction.
    pub dump_buffer_bytes_max: u64,
    /// Bytes of relay log a replication connection's SQL side holds in memory, read and not yet applied
    /// (counted as their relay-log bytes); reading stops at it, passing it by less than one transaction.
    pub read_ahead_bytes_max: u64,
    /// Space the relay log files of one replication connection may take on disk (MariaDB's
    /// `relay_log_space_limit`): a transaction that would pass it waits, and receiving with it, until the SQL
    /// side has applied and purged relay files. Only a transaction larger than the bound passes it, received
    /// into an otherwise empty relay log.
    pub relay_log_space_bytes_max: u64,
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
        let bounds = [
            ("dump_buffer_bytes_max", self.dump_buffer_bytes_max),
            ("read_ahead_bytes_max", self.read_ahead_bytes_max),
            ("relay_log_space_bytes_max", self.relay_log_space_bytes_max),
        ];
        for (name, value) in bounds {
            if value < BOUND_BYTES_MIN {
                return Err(format!("{name} {value} must be at least {BOUND_BYTES_MIN} bytes"));
            }
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
            dump_buffer_bytes_max: 8 << 20,
            read_ahead_bytes_max: 64 << 20,
            relay_log_space_bytes_max: 1 << 30,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_bound_below_its_minimum_is_refused_naming_it() {
        assert_eq!(Limits::default().check(), Ok(()));
        let low = BOUND_BYTES_MIN - 1;
        for (limits, name) in [
            (Limits { dump_buffer_bytes_max: low, ..Limits::default() }, "dump_buffer_bytes_max"),
            (Limits { read_ahead_bytes_max: low, ..Limits::default() }, "read_ahead_bytes_max"),
            (Limits { relay_log_space_bytes_max: low, ..Limits::default() }, "relay_log_space_bytes_max"),
        ] {
            let err = limits.check().unwrap_err();
            assert!(err.contains(name) && err.contains(&BOUND_BYTES_MIN.to_string()), "{err}");
        }
        let at_min = Limits {
            dump_buffer_bytes_max: BOUND_BYTES_MIN,
            read_ahead_bytes_max: BOUND_BYTES_MIN,
            relay_log_space_bytes_max: BOUND_BYTES_MIN,
            ..Limits::default()
        };
        assert_eq!(at_min.check(), Ok(()));
    }
}

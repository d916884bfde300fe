//! ferryd's integration tests, one module per subject, in one test binary: each starts real `ferryd` processes
//! (the harness in `../common`) and talks to them over their real sockets. One binary rather than one per file: the
//! harness and the crates they link are compiled and linked once. The tests built with failpoints
//! (`storage_failed.rs`, `rewind_failed.rs`, `dump_seek_slow.rs`) stay binaries of their own, as the failpoint build
//! runs them alone.
//!
//!     cd engine && cargo test -p ferryd --test integration              (all of them)
//!     cd engine && cargo test -p ferryd --test integration bounds::     (one module)

#[path = "../common/mod.rs"]
mod common;

mod admin_api;
mod admin_connections;
mod bad_input;
mod bounds;
mod clone;
mod consumers;
mod consumers_failover;
mod corruption;
mod dba_binlog;
mod dba_replication;
mod fencing;
mod five_servers;
mod in_flight;
mod limits;
mod parallel_apply;
mod parallel_online;
mod protocol_timeouts;
mod read_only;
mod recovery;
mod replication;
mod rewind;
mod semi_sync;
mod transactions;
mod until;

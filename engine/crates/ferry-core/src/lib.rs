//! Ferry's engine core: everything a node does that needs no socket.
//!
//! - [`gtid`]: GTIDs, positions and binlog state; parsing, formatting, ahead-of, difference, join.
//! - [`gtid_alloc`]: per-domain seq_no allocation, raised by replicated GTIDs, checked by strict mode.
//! - [`clock`]: the clock timed decisions read (semi-sync's timeout, the replica delay): the system's, or a manual
//!   one that tests and the replica simulation move.
//! - [`codec`]: the little-endian byte encoding shared by the binlog and the wire protocol.
//! - [`row`]: rows, row operations (put / delete / increment) and the row images the binlog keeps.
//! - [`binlog`]: checksummed event files, their index, reading, writing, tail recovery, start-position search and
//!   streaming to replicas.
//! - [`relay`]: a replication connection's relay log (received, not yet applied).
//! - [`semisync`]: network durability: commit acknowledgements wait for K replicas' confirmations.
//! - [`store`]: the redb-backed row store, durable at checkpoints, and its order-independent checksums.
//! - [`admission`]: the gate of client writes — read-only, and the exact count of client commits in flight.
//! - [`locks`]: per-row locks taken in sorted order, so conflicting transactions serialise without deadlock.
//! - [`commit`]: group commit — leader/follower queue, one fsync per group, commit order kept.
//! - [`fault`]: fail-stop storage health, and the failpoints (tests only) that inject I/O errors.
//! - [`node`]: a node's whole write path and recovery, tying the above together.
//! - [`vfs`]: the file layer the binlog and the store write through, and (tests) a simulated disk that loses
//!   what was not fsynced.
//! - [`clone_chunk`]: the checksummed chunks of rows a clone streams, and their strict decoder.
//! - [`protocol`]: the framed, versioned binary protocol clients and nodes speak.
//! - [`limits`]: the named limits on what a client can make a node hold.

pub mod admission;
pub mod binlog;
pub mod clock;
pub mod clone_chunk;
pub mod codec;
pub mod commit;
pub mod fault;
pub mod gtid;
pub mod gtid_alloc;
pub mod limits;
pub mod locks;
pub mod node;
pub mod protocol;
pub mod relay;
pub mod row;
pub mod semisync;
pub mod store;
pub mod vfs;

pub use gtid::{BinlogState, DomainId, Gtid, GtidParseError, GtidPosition, SeqNo, ServerId};

//! Async Rust client for `ferryd`'s transaction protocol (see docs/protocol.md).
//!
//! One [`Client`] is one connection; requests on it are answered in order. Server refusals come back as
//! [`ClientError::Server`] with the stable [`ErrorCode`] and the node's message.
//!
//! Change consumers subscribe to committed transactions by GTID position:
//! - `subscription`: [`Subscription`], one node's stream of [`Change`]s, each with the position to store;
//! - `follow`: [`MasterSubscription`], which follows the master among a cluster's nodes across switchovers and
//!   failovers, resuming at its per-domain position.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ferry_client::ClientError> {
//! use ferry_client::{FollowOptions, Followed, MasterSubscription, SubscribeOptions};
//! let mut options = SubscribeOptions::new("cache-invalidator", "the-consumer-token-from-its-file");
//! options.start = Some("0-1-41,1-2-7".parse().unwrap()); // stored with the cache, or None: from now
//! let nodes = ["10.0.0.1:7301".to_string(), "10.0.0.2:7301".to_string()];
//! let mut changes = MasterSubscription::new(&nodes, FollowOptions::new(options))?;
//! loop {
//!     if let Followed::Change(change) = changes.next().await? {
//!         for row in &change.changes {
//!             println!("invalidate {}[{}]", row.table, row.key);
//!         }
//!         println!("store {} with the cache", change.position);
//!     }
//! }
//! # }
//! ```
//!
//! ```no_run
//! # async fn demo() -> Result<(), ferry_client::ClientError> {
//! let mut client = ferry_client::Client::connect("127.0.0.1:7301").await?;
//! let done = client.transact(ferry_client::Txn::new().domain(2).increment("accounts", "alice", "balance", 5)).await?;
//! println!("committed as {}", done.gtid);
//! # Ok(()) }
//! ```

mod follow;
mod subscription;

use std::time::Duration;

pub use ferry_core::binlog::reader::ReadEvent;
pub use follow::{is_final, FollowOptions, Followed, MasterSubscription};
pub use subscription::{decode_transaction, Change, SubscribeOptions, Subscription, Update};

use ferry_core::gtid::{DomainId, Gtid, GtidPosition, SeqNo, ServerId};
pub use ferry_core::protocol::ErrorCode;
use ferry_core::protocol::{Request, Response, LENGTH_BYTES};
use ferry_core::row::{Row, RowOp};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::{TcpStream, ToSocketAddrs};

/// Largest response frame the client accepts.
pub const RESPONSE_BYTES_MAX: usize = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    /// The node refused the request.
    #[error("{}: {message}", code.map_or("UNKNOWN_ERROR", ErrorCode::name))]
    Server { code: Option<ErrorCode>, raw_code: u16, message: String },
    /// The node sent something this client does not understand.
    #[error("protocol: {0}")]
    Protocol(String),
    /// A subscription's stream ended without an error frame (the node closed it, or fell silent).
    #[error("subscription ended: {0}")]
    Ended(String),
}

impl ClientError {
    /// The server's error code, when this is a server refusal.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Server { code, .. } => *code,
            _ => None,
        }
    }
}

/// A committed transaction's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commit {
    pub gtid: Gtid,
    pub commit_id: u64,
    pub commit_ts_us: u64,
}

/// Node counters returned by [`Client::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub commits: u64,
    pub groups: u64,
    pub fsyncs: u64,
    pub bytes_written: u64,
}

/// A node's answer to [`Client::role`]: the master of its domains is writable and replicates from nobody; a
/// writable node that replicates is a replica someone made writable, never where a client should write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Role {
    pub read_only: bool,
    /// A replication connection is configured (running or not).
    pub replicates: bool,
}

impl Role {
    /// Writable and replicating from nobody.
    pub fn is_master(&self) -> bool {
        !self.read_only && !self.replicates
    }
}

/// A transaction under construction.
#[derive(Debug, Clone, Default)]
pub struct Txn {
    pub domain: Option<DomainId>,
    pub server_id: Option<ServerId>,
    pub seq_no: Option<SeqNo>,
    pub ops: Vec<RowOp>,
}

impl Txn {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs the transaction in `domain` instead of the node's default.
    pub fn domain(mut self, domain: DomainId) -> Self {
        self.domain = Some(domain);
        self
    }

    /// Privileged: keep this GTID (server_id and seq_no) instead of allocating one.
    pub fn gtid(mut self, server_id: ServerId, seq_no: SeqNo) -> Self {
        self.server_id = Some(server_id);
        self.seq_no = Some(seq_no);
        self
    }

    pub fn put(mut self, table: &str, key: &str, row: Row) -> Self {
        self.ops.push(RowOp::Put { table: table.into(), key: key.into(), row });
        self
    }

    pub fn delete(mut self, table: &str, key: &str) -> Self {
        self.ops.push(RowOp::Delete { table: table.into(), key: key.into() });
        self
    }

    pub fn increment(mut self, table: &str, key: &str, field: &str, by: i64) -> Self {
        self.ops.push(RowOp::Increment { table: table.into(), key: key.into(), field: field.into(), by });
        self
    }
}

/// One connection to a node.
pub struct Client {
    stream: BufStream<TcpStream>,
    next_request_id: u32,
}

impl Client {
    pub async fn connect(addr: impl ToSocketAddrs) -> Result<Self, ClientError> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Client { stream: BufStream::new(stream), next_request_id: 1 })
    }

    /// The address of the server this client is connected to.
    pub fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.stream.get_ref().peer_addr()
    }

    /// Sends raw bytes (tests use it to send malformed frames).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        self.stream.write_all(bytes).await?;
        self.stream.flush().await?;
        Ok(())
    }

    /// Reads one response frame: its request id and the response.
    pub async fn read_response(&mut self) -> Result<(u32, Response), ClientError> {
        let mut len = [0u8; LENGTH_BYTES];
        self.stream.read_exact(&mut len).await?;
        let len = u32::from_le_bytes(len) as usize;
        if len > RESPONSE_BYTES_MAX {
            return Err(ClientError::Protocol(format!("response frame of {len} bytes exceeds {RESPONSE_BYTES_MAX}")));
        }
        let mut frame = vec![0u8; len];
        self.stream.read_exact(&mut frame).await?;
        let (header, resp) = Response::decode(&frame).map_err(|e| ClientError::Protocol(e.to_string()))?;
        Ok((header.request_id, resp))
    }

    /// Sends a request and returns its response; an error response becomes [`ClientError::Server`].
    pub async fn call(&mut self, request: &Request) -> Result<Response, ClientError> {
        let id = self.next_request_id;
        self.next_request_id = self.next_request_id.wrapping_add(1);
        self.send_raw(&request.encode(id)).await?;
        let (got_id, resp) = self.read_response().await?;
        if let Response::Error { code, message } = resp {
            return Err(ClientError::Server { code: ErrorCode::from_u16(code), raw_code: code, message });
        }
        if got_id != id {
            return Err(ClientError::Protocol(format!("response to request {got_id} arrived while waiting for {id}")));
        }
        Ok(resp)
    }

    fn unexpected(resp: Response) -> ClientError {
        ClientError::Protocol(format!("unexpected response {resp:?}"))
    }

    pub async fn hello(&mut self, client: &str) -> Result<(ServerId, DomainId), ClientError> {
        match self.call(&Request::Hello { client: client.into() }).await? {
            Response::Hello { server_id, default_domain, .. } => Ok((server_id, default_domain)),
            other => Err(Self::unexpected(other)),
        }
    }

    /// Presents the admin token; the connection may then set GTIDs explicitly.
    pub async fn auth(&mut self, token: &str) -> Result<(), ClientError> {
        match self.call(&Request::Auth { token: token.into() }).await? {
            Response::AuthOk => Ok(()),
            other => Err(Self::unexpected(other)),
        }
    }

    pub async fn transact(&mut self, txn: Txn) -> Result<Commit, ClientError> {
        let req = Request::Transact { domain: txn.domain, server_id: txn.server_id, seq_no: txn.seq_no, ops: txn.ops };
        match self.call(&req).await? {
            Response::Committed { gtid, commit_id, commit_ts_us } => Ok(Commit { gtid, commit_id, commit_ts_us }),
            other => Err(Self::unexpected(other)),
        }
    }

    pub async fn increment(&mut self, table: &str, key: &str, field: &str, by: i64) -> Result<Commit, ClientError> {
        self.transact(Txn::new().increment(table, key, field, by)).await
    }

    pub async fn get(&mut self, table: &str, key: &str) -> Result<Option<Row>, ClientError> {
        match self.call(&Request::Get { table: table.into(), key: key.into() }).await? {
            Response::Row { row } => Ok(row),
            other => Err(Self::unexpected(other)),
        }
    }

    /// Waits until the node has reached `position`; returns the node's position then.
    pub async fn wait_for_position(&mut self, position: &str, timeout: Duration) -> Result<GtidPosition, ClientError> {
        let req = Request::WaitPosition { position: position.into(), timeout_ms: timeout.as_millis() as u64 };
        match self.call(&req).await? {
            Response::Reached { position } => position.parse().map_err(|e| ClientError::Protocol(format!("{e}"))),
            other => Err(Self::unexpected(other)),
        }
    }

    pub async fn stats(&mut self) -> Result<Stats, ClientError> {
        match self.call(&Request::Stats).await? {
            Response::Stats { commits, groups, fsyncs, bytes_written } => {
                Ok(Stats { commits, groups, fsyncs, bytes_written })
            }
            other => Err(Self::unexpected(other)),
        }
    }

    /// Whether the node takes client writes and whether it replicates (see [`Role`]).
    pub async fn role(&mut self) -> Result<Role, ClientError> {
        match self.call(&Request::Role).await? {
            Response::Role { read_only, replicates } => Ok(Role { read_only, replicates }),
            other => Err(Self::unexpected(other)),
        }
    }

    pub async fn ping(&mut self) -> Result<(), ClientError> {
        match self.call(&Request::Ping).await? {
            Response::Pong => Ok(()),
            other => Err(Self::unexpected(other)),
        }
    }
}

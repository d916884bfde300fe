//! The binary protocol server: one tokio task per connection, a semaphore bounding connections. A transaction's
//! row-lock and commit waits are async, so a waiting client holds no thread; only a commit group's leader work
//! (one write and one fsync for the whole group) runs on the blocking pool.
//!
//! A bad frame gets an error frame and the connection goes on; only a frame too large to skip safely ends the
//! connection, after saying why.
//!
//! Time is bounded too (docs/security.md "ferryd limits"): a connection that begins no request within the idle
//! timeout of opening or of its previous answer is closed, after an error frame saying why; a frame once begun
//! must arrive whole within the frame timeout, and each answer must be taken by the client within as long.
//! The idle timeout only ever applies to waiting for a client's next request: a request being served (a long
//! wait-for-position, a commit waiting for a row lock) is not cut, and once a replica's `Dump` has turned the
//! connection into a binlog stream the master only sends, so nothing here applies to it any more.
//!
//! Roles (docs/security.md): a connection without a token may transact, read and wait; `Auth` with the consumer
//! token gives it the change consumer's read-only role (reads and `Subscribe`, served by `subscribe`: no writes,
//! no dumps); `Auth` with the admin token makes it privileged (binlog dumps for replicas, explicit GTIDs).
//!
//! Connections that authenticate (replicas, the control plane: `Auth` with the admin token) are not counted among
//! the others: an `Auth` moves its connection to places of their own (as many as `--max-connections`), and when
//! every other place is taken a new connection gets one of `RESERVED_FOR_AUTH` kept places, where it may only
//! authenticate, within `AUTHENTICATE_WITHIN` — so clients that hold every place (slow or idle ones) cannot keep a
//! replica from following a new master, nor the control plane out.
//!
//! A stop (`serve`'s `stop`) ends the accept loop, then waits up to `DRAIN_WITHIN` for the open connections: an
//! idle one is told "shutting down", a wait for a position ends with the same answer, and a commit under way is
//! finished and answered — or, left unconfirmed by semi-sync replicas, ended without an answer and logged — before
//! the node closes its binlog.

use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use ferry_core::gtid::GtidPosition;
use ferry_core::node::{Node, TxnError, TxnRequest};
use ferry_core::protocol::{split_frame, ErrorCode, FrameError, Request, Response, HEADER_BYTES};
use tokio::io::{AsyncWriteExt, BufReader, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::auth::{Access, Credentials};
use crate::consumers::ConsumerRegistry;
use crate::dump::{self, DumpRequest};
use crate::frames::{read_frame, FrameLimits, Next};
use crate::replicas::ReplicaRegistry;
use crate::subscribe::{self, ConsumerLimits, SubscribeRequest};

/// Places kept for connections that authenticate first, once every other place is taken.
pub const RESERVED_FOR_AUTH: usize = 16;
/// How long a connection in a kept place has to authenticate (asking nothing else first).
pub const AUTHENTICATE_WITHIN: Duration = Duration::from_secs(5);
/// How long a stop waits for open connections to finish what they are doing (a commit's answer, a stream's last
/// frame) before it closes them.
pub const DRAIN_WITHIN: Duration = Duration::from_secs(10);

/// The pools of places: any connection's (`--max-connections`), authenticated ones' (as many), and those kept for
/// connections that authenticate first.
#[derive(Clone)]
struct Places {
    any: Arc<Semaphore>,
    authenticated: Arc<Semaphore>,
    reserved: Arc<Semaphore>,
    max: usize,
}

/// A connection's place, and the pools it may move between.
struct Seat {
    places: Places,
    place: Place,
}

/// A connection's place.
enum Place {
    Any(#[allow(dead_code)] OwnedSemaphorePermit),
    /// Kept for a connection that must authenticate before this instant.
    Reserved(#[allow(dead_code)] OwnedSemaphorePermit, Instant),
    Authenticated(#[allow(dead_code)] OwnedSemaphorePermit),
}

/// The protocol port's timeouts (`--protocol-idle-timeout-s`, `--protocol-frame-timeout-s`).
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Longest wait for a client's next request; None: no limit.
    pub idle: Option<Duration>,
    /// Longest time for the rest of a frame once begun, and for the client to take an answer.
    pub frame: Duration,
}

/// What every connection of the protocol port reaches.
#[derive(Clone)]
pub struct Context {
    pub node: Arc<Node>,
    pub credentials: Credentials,
    /// Where dump streams register their replica.
    pub replicas: Arc<ReplicaRegistry>,
    /// Where subscriptions register their consumer.
    pub consumers: Arc<ConsumerRegistry>,
    pub consumer_limits: ConsumerLimits,
    pub timeouts: Timeouts,
    /// The snapshots this node holds for clones (as a donor).
    pub donations: Arc<crate::clone::donor::Donations>,
    /// This node's own clone (as a recipient): while unfinished, client writes are refused naming it.
    pub cloning: Arc<crate::clone::Cloning>,
}

pub async fn serve(listener: TcpListener, context: Context, mut stop: watch::Receiver<bool>) {
    let max = context.node.config().limits.connections_max;
    let places = Places {
        any: Arc::new(Semaphore::new(max)),
        authenticated: Arc::new(Semaphore::new(max)),
        reserved: Arc::new(Semaphore::new(RESERVED_FOR_AUTH)),
        max,
    };
    let mut connections = JoinSet::new();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            _ = stop.changed() => break,
        };
        let _ = stream.set_nodelay(true);
        let place = match places.any.clone().try_acquire_owned() {
            Ok(permit) => Place::Any(permit),
            Err(_) => match places.reserved.clone().try_acquire_owned() {
                Ok(permit) => Place::Reserved(permit, Instant::now() + AUTHENTICATE_WITHIN),
                Err(_) => {
                    tokio::spawn(refuse(stream, max));
                    continue;
                }
            },
        };
        let (context, stop) = (context.clone(), stop.clone());
        let places = places.clone();
        connections.spawn(async move {
            let seat = Seat { places, place };
            let connection = Connection::new(stream, context, peer.to_string(), seat);
            if let Err(e) = connection.run(stop).await {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        });
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN_WITHIN, async { while connections.join_next().await.is_some() {} });
    if drained.await.is_err() {
        tracing::warn!(
            "{} protocol connection(s) still busy {} s into the stop; closing them without an answer",
            connections.len(),
            DRAIN_WITHIN.as_secs()
        );
    }
}

async fn refuse(mut stream: TcpStream, max: usize) {
    let msg = format!("too many connections: this node serves at most {max} at once");
    let _ = stream.write_all(&Response::error(ErrorCode::TooManyConnections, msg).encode(0)).await;
    let _ = stream.shutdown().await;
}

struct Connection {
    reader: BufReader<OwnedReadHalf>,
    writer: BufWriter<OwnedWriteHalf>,
    node: Arc<Node>,
    context: Context,
    peer: String,
    /// Set by a successful `Auth`: with the admin token the connection may set server_id / seq_no and dump the
    /// binlog; with the consumer token it may subscribe and no longer write.
    access: Access,
    timeouts: Timeouts,
    /// Its place under the caps, given back when the connection ends.
    seat: Seat,
}

impl Connection {
    fn new(stream: TcpStream, context: Context, peer: String, seat: Seat) -> Self {
        let (r, w) = stream.into_split();
        Connection {
            reader: BufReader::new(r),
            writer: BufWriter::new(w),
            node: context.node.clone(),
            timeouts: context.timeouts,
            context,
            peer,
            access: Access::Anonymous,
            seat,
        }
    }

    /// Writes an answer; a client that does not take it within the frame timeout loses the connection.
    async fn send(&mut self, request_id: u32, response: Response) -> std::io::Result<()> {
        let bytes = response.encode(request_id);
        let write = async {
            self.writer.write_all(&bytes).await?;
            self.writer.flush().await
        };
        match tokio::time::timeout(self.timeouts.frame, write).await {
            Ok(written) => written,
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client took no answer for {} s", self.timeouts.frame.as_secs()),
            )),
        }
    }

    /// Ends the connection after an error frame saying why.
    async fn close_with(&mut self, code: ErrorCode, message: String) -> std::io::Result<()> {
        tracing::debug!(peer = %self.peer, "closing a protocol connection: {message}");
        self.send(0, Response::error(code, message)).await
    }

    async fn run(mut self, mut stop: watch::Receiver<bool>) -> std::io::Result<()> {
        let limits = FrameLimits {
            bytes_max: self.node.config().limits.frame_bytes_max,
            idle: self.timeouts.idle,
            frame: self.timeouts.frame,
        };
        let mut frame = Vec::new();
        loop {
            let deadline = self.authenticate_by();
            let next = tokio::select! {
                next = read_frame(&mut self.reader, &mut frame, limits) => next?,
                _ = stopping(&mut stop) => {
                    return self.send(0, Response::error(ErrorCode::ShuttingDown, "the node is shutting down")).await;
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    let msg = self.kept_place_message("it did not authenticate in time");
                    return self.close_with(ErrorCode::TooManyConnections, msg).await;
                }
            };
            match next {
                Next::Frame => {}
                Next::Closed => return Ok(()),
                Next::Idle => {
                    let idle = limits.idle.map_or(0, |d| d.as_secs());
                    let msg = format!(
                        "no request for {idle} s (--protocol-idle-timeout-s); closing the connection: reconnect to go on"
                    );
                    return self.close_with(ErrorCode::Timeout, msg).await;
                }
                Next::TooLarge { declared } => {
                    let max = limits.bytes_max;
                    let msg = format!("frame of {declared} bytes exceeds the {max}-byte limit; closing the connection");
                    return self.close_with(ErrorCode::FrameTooLarge, msg).await;
                }
                Next::Stalled { declared, received } => {
                    let of =
                        declared.map_or("part of its length".to_string(), |len| format!("{received} of {len} bytes"));
                    let msg = format!(
                        "a frame begun was not whole within {} s (--protocol-frame-timeout-s): {of} arrived; \
                         closing the connection",
                        limits.frame.as_secs()
                    );
                    return self.close_with(ErrorCode::Timeout, msg).await;
                }
            }
            if self.authenticate_by().is_some()
                && !matches!(Request::decode(&frame), Ok((_, Request::Hello { .. } | Request::Auth { .. })))
            {
                let msg = self.kept_place_message("it asked something else first");
                return self.close_with(ErrorCode::TooManyConnections, msg).await;
            }
            let (request_id, response) = match Request::decode(&frame) {
                Ok((header, Request::Dump { server_id, position, heartbeat_ms, listen, admin }))
                    if self.access == Access::Admin =>
                {
                    let req = DumpRequest {
                        request_id: header.request_id,
                        server_id,
                        position,
                        heartbeat_ms,
                        peer: self.peer.clone(),
                        listen,
                        admin,
                        frame_timeout: self.timeouts.frame,
                    };
                    // `_seat` keeps the connection's place while it streams.
                    let Connection { reader, mut writer, node, context, seat: _seat, .. } = self;
                    return dump::serve(reader, &mut writer, &node, &context.replicas, req, stop).await;
                }
                Ok((header, Request::Dump { .. })) => (
                    header.request_id,
                    Response::error(
                        ErrorCode::PermissionDenied,
                        if self.access == Access::Consumer {
                            "streaming the binlog as a replica needs the admin token: a change consumer subscribes \
                             (Subscribe) instead"
                        } else {
                            "streaming the binlog needs a privileged connection (Auth with the admin token)"
                        },
                    ),
                ),
                Ok((header, Request::Clone { clone_id, resume_after, chunk_bytes }))
                    if self.access == Access::Admin =>
                {
                    if let Some(why) = self.context.cloning.refusal("serving a clone") {
                        (header.request_id, Response::error(ErrorCode::InvalidRequest, why))
                    } else {
                        let req = crate::clone::donor::CloneRequest {
                            request_id: header.request_id,
                            clone_id,
                            resume_after,
                            chunk_bytes,
                            peer: self.peer.clone(),
                        };
                        // `_seat` keeps the connection's place while it streams.
                        let Connection { mut reader, mut writer, node, context, seat: _seat, .. } = self;
                        let donations = &context.donations;
                        return crate::clone::donor::serve(&mut reader, &mut writer, &node, donations, req, stop).await;
                    }
                }
                Ok((header, Request::Clone { .. })) => (
                    header.request_id,
                    Response::error(
                        ErrorCode::PermissionDenied,
                        "a clone needs a privileged connection (Auth with the admin token)",
                    ),
                ),
                Ok((header, Request::Subscribe { name, position, heartbeat_ms, domains }))
                    if self.access != Access::Anonymous =>
                {
                    let req = SubscribeRequest {
                        request_id: header.request_id,
                        name,
                        position,
                        heartbeat_ms,
                        domains,
                        peer: self.peer.clone(),
                        frame_timeout: self.timeouts.frame,
                    };
                    // `_seat` keeps the connection's place while it streams. The stream writes to the bare socket,
                    // so that what the consumer has taken is known.
                    let Connection { reader, mut writer, node, context, seat: _seat, .. } = self;
                    writer.flush().await?;
                    let mut socket = writer.into_inner();
                    let (consumers, limits) = (&context.consumers, context.consumer_limits);
                    return subscribe::serve(reader, &mut socket, &node, consumers, limits, req, stop).await;
                }
                Ok((header, Request::Subscribe { .. })) => (
                    header.request_id,
                    Response::error(
                        ErrorCode::PermissionDenied,
                        "subscribing to changes needs Auth with the consumer token (--consumer-token-file)",
                    ),
                ),
                Ok((header, request)) => match self.handle(request, &mut stop).await {
                    Some(response) => (header.request_id, response),
                    None => return Ok(()), // no answer is the true one: the client learns its outcome is unknown
                },
                Err(e) => {
                    // The frame boundary is known, so the connection can go on after saying what was wrong.
                    let id = if frame.len() >= HEADER_BYTES {
                        split_frame(&frame).map_or(0, |(h, _)| h.request_id)
                    } else {
                        0
                    };
                    (id, frame_error(&e))
                }
            };
            if self.access == Access::Consumer && self.authenticate_by().is_some() {
                let msg = self.kept_place_message("a change consumer's token does not take a kept place");
                return self.close_with(ErrorCode::TooManyConnections, msg).await;
            }
            self.send(request_id, response).await?;
        }
    }

    /// Until when a connection in a kept place may take to authenticate (None: it is in another place).
    fn authenticate_by(&self) -> Option<Instant> {
        match self.seat.place {
            Place::Reserved(_, deadline) if self.access != Access::Admin => Some(deadline),
            _ => None,
        }
    }

    fn kept_place_message(&self, why: &str) -> String {
        format!(
            "too many connections: this node serves at most {} at once (--max-connections); this connection had a \
             place kept for replicas and the control plane, which authenticate first, and {why}",
            self.seat.places.max
        )
    }

    /// An authenticated connection leaves the places of the others for one of its own (when one is free).
    fn authenticated(&mut self) {
        self.access = Access::Admin;
        if !matches!(self.seat.place, Place::Authenticated(_)) {
            if let Ok(permit) = self.seat.places.authenticated.clone().try_acquire_owned() {
                self.seat.place = Place::Authenticated(permit); // the other place is given back
            }
        }
    }

    /// The answer to one request; `None` when the connection must end without one: a commit the node's stop
    /// left unconfirmed by its semi-sync replicas is neither done nor refused, and no error code says that.
    /// A stop ends any other request (a wait for a position) with "shutting down"; a commit is seen through.
    async fn handle(&mut self, request: Request, stop: &mut watch::Receiver<bool>) -> Option<Response> {
        if let Request::Transact { domain, server_id, seq_no, ops } = request {
            if self.access == Access::Consumer {
                return Some(Response::error(
                    ErrorCode::PermissionDenied,
                    "this connection authenticated as a change consumer, whose role is read-only: it may not write",
                ));
            }
            if let Some(why) = self.context.cloning.refusal("client writes") {
                return Some(Response::error(ErrorCode::ReadOnly, why));
            }
            let privileged = self.access == Access::Admin;
            return match self.node.execute_async(TxnRequest { domain, server_id, seq_no, ops }, privileged).await {
                Ok(c) => {
                    Some(Response::Committed { gtid: c.gtid, commit_id: c.commit_id, commit_ts_us: c.commit_ts_us })
                }
                Err(e @ TxnError::Unconfirmed(_)) => {
                    tracing::warn!(peer = %self.peer, "closing a protocol connection without an answer: {e}");
                    None
                }
                Err(e) => Some(txn_error(&e)),
            };
        }
        tokio::select! {
            answer = self.answer(request) => Some(answer),
            _ = stopping(stop) => {
                Some(Response::error(ErrorCode::ShuttingDown, "the node is shutting down"))
            }
        }
    }

    async fn answer(&mut self, request: Request) -> Response {
        match request {
            Request::Hello { .. } => Response::Hello {
                server_id: self.node.config().server_id,
                default_domain: self.node.config().default_domain,
                protocol_version: ferry_core::protocol::PROTOCOL_VERSION,
            },
            Request::Auth { token } => match self.context.credentials.authenticate(&token) {
                Ok(Access::Admin) => {
                    self.authenticated();
                    Response::AuthOk
                }
                Ok(access) => {
                    self.access = access;
                    Response::AuthOk
                }
                Err(why) => Response::error(ErrorCode::PermissionDenied, why),
            },
            Request::Transact { .. } => unreachable!("transactions are answered by handle"),
            Request::Get { table, key } => match self.node.read_row(&table, &key) {
                Ok(row) => Response::Row { row },
                Err(e) => txn_error(&e),
            },
            Request::WaitPosition { position, timeout_ms } => self.wait_position(&position, timeout_ms).await,
            Request::Stats => {
                let c = self.node.counters();
                Response::Stats {
                    commits: c.commits,
                    groups: c.groups,
                    fsyncs: c.fsyncs,
                    bytes_written: c.bytes_written,
                }
            }
            Request::Ping => Response::Pong,
            Request::Role => Response::Role { read_only: self.node.is_read_only(), replicates: self.node.replicates() },
            Request::PositionAt { file, offset } => {
                let path = self.node.binlog_dir().join(&file);
                if ferry_core::binlog::file_seq(&file).is_none() || !path.exists() {
                    return Response::error(
                        ErrorCode::InvalidRequest,
                        format!("{file:?} is not a binlog file of this node"),
                    );
                }
                match tokio::task::spawn_blocking(move || ferry_core::binlog::seek::position_at(&path, offset)).await {
                    Ok(Ok(pos)) => Response::Reached { position: pos.to_string() },
                    Ok(Err(e)) => Response::error(ErrorCode::InvalidRequest, e.to_string()),
                    Err(e) => Response::error(ErrorCode::NodeFailed, format!("position task failed: {e}")),
                }
            }
            Request::Dump { .. } | Request::Subscribe { .. } | Request::Clone { .. } => {
                unreachable!("streams are served by run")
            }
            Request::Ack { .. } => {
                Response::error(ErrorCode::InvalidRequest, "Ack is only meaningful during a binlog dump")
            }
        }
    }

    async fn wait_position(&self, text: &str, timeout_ms: u64) -> Response {
        let target: GtidPosition = match text.parse() {
            Ok(p) => p,
            Err(e) => return Response::error(ErrorCode::BadGtid, e.to_string()),
        };
        let max = self.node.config().limits.wait_ms_max;
        if timeout_ms > max {
            return Response::error(
                ErrorCode::InvalidRequest,
                format!("timeout of {timeout_ms} ms exceeds the {max} ms limit"),
            );
        }
        match self.node.wait_for_position_async(&target, Duration::from_millis(timeout_ms)).await {
            Ok(pos) => Response::Reached { position: pos.to_string() },
            Err(pos) => Response::error(
                ErrorCode::Timeout,
                format!("position {text} not reached within {timeout_ms} ms; the node is at {pos}"),
            ),
        }
    }
}

/// Returns once the node is stopping (at once if it already is; also if the stop's sender is gone).
async fn stopping(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

fn frame_error(e: &FrameError) -> Response {
    Response::error(e.code(), e.to_string())
}

fn txn_error(e: &TxnError) -> Response {
    let code = match e {
        TxnError::ReadOnly => ErrorCode::ReadOnly,
        TxnError::Invalid(_) => ErrorCode::InvalidRequest,
        TxnError::TooLarge(_) => ErrorCode::TxnTooLarge,
        TxnError::EventTooLarge { .. } => ErrorCode::EventTooLarge,
        TxnError::SeqNoExhausted { .. } => ErrorCode::SeqNoExhausted,
        TxnError::TypeMismatch { .. } => ErrorCode::TypeMismatch,
        TxnError::Overflow { .. } => ErrorCode::Overflow,
        TxnError::Strict(_) | TxnError::TwoMasters(_) => ErrorCode::StrictMode,
        TxnError::PermissionDenied(_) => ErrorCode::PermissionDenied,
        TxnError::NodeFailed(_) | TxnError::Unconfirmed(_) => ErrorCode::NodeFailed,
        TxnError::RowMismatch { .. } => ErrorCode::InvalidRequest,
    };
    Response::error(code, e.to_string())
}

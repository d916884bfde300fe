//! The binary protocol server: one tokio task per connection, a semaphore bounding connections. A transaction's
//! row-lock and commit waits are async, so a waiting client holds no thread; only a commit group's leader work
//! (one write and one fsync for the whole group) runs on the blocking pool.
//!
//! A bad frame gets an error frame and the connection goes on; only a frame too large to skip safely ends the
//! connection, after saying why.

use std::sync::Arc;
use std::time::Duration;

use ferry_core::gtid::GtidPosition;
use ferry_core::node::{Node, TxnError, TxnRequest};
use ferry_core::protocol::{split_frame, ErrorCode, FrameError, Request, Response, HEADER_BYTES, LENGTH_BYTES};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use crate::auth::AdminToken;
use crate::dump::{self, DumpRequest};
use crate::replicas::ReplicaRegistry;

pub async fn serve(
    listener: TcpListener,
    node: Arc<Node>,
    token: Option<AdminToken>,
    registry: Arc<ReplicaRegistry>,
    mut stop: watch::Receiver<bool>,
) {
    let max = node.config().limits.connections_max;
    let permits = Arc::new(Semaphore::new(max));
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
            _ = stop.changed() => return,
        };
        let _ = stream.set_nodelay(true);
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tokio::spawn(refuse(stream, max));
            continue;
        };
        let (node, token, registry, stop) = (node.clone(), token.clone(), registry.clone(), stop.clone());
        tokio::spawn(async move {
            if let Err(e) = Connection::new(stream, node, token, registry, peer.to_string()).run(stop).await {
                tracing::debug!(%peer, "connection ended: {e}");
            }
            drop(permit);
        });
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
    token: Option<AdminToken>,
    /// Where dump streams register their replica.
    registry: Arc<ReplicaRegistry>,
    peer: String,
    /// Set by a successful `Auth`: the connection may then set server_id / seq_no and dump the binlog.
    privileged: bool,
}

impl Connection {
    fn new(
        stream: TcpStream,
        node: Arc<Node>,
        token: Option<AdminToken>,
        registry: Arc<ReplicaRegistry>,
        peer: String,
    ) -> Self {
        let (r, w) = stream.into_split();
        Connection {
            reader: BufReader::new(r),
            writer: BufWriter::new(w),
            node,
            token,
            registry,
            peer,
            privileged: false,
        }
    }

    async fn send(&mut self, request_id: u32, response: Response) -> std::io::Result<()> {
        self.writer.write_all(&response.encode(request_id)).await?;
        self.writer.flush().await
    }

    async fn run(mut self, mut stop: watch::Receiver<bool>) -> std::io::Result<()> {
        let max = self.node.config().limits.frame_bytes_max;
        let mut frame = Vec::new();
        loop {
            let mut len = [0u8; LENGTH_BYTES];
            tokio::select! {
                read = self.reader.read_exact(&mut len) => match read {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                    Err(e) => return Err(e),
                },
                _ = stop.changed() => {
                    return self.send(0, Response::error(ErrorCode::ShuttingDown, "the node is shutting down")).await;
                }
            }
            let len = u32::from_le_bytes(len) as usize;
            if len > max {
                let msg = format!("frame of {len} bytes exceeds the {max}-byte limit; closing the connection");
                return self.send(0, Response::error(ErrorCode::FrameTooLarge, msg)).await;
            }
            frame.resize(len, 0);
            self.reader.read_exact(&mut frame).await?;
            let (request_id, response) = match Request::decode(&frame) {
                Ok((header, Request::Dump { server_id, position, heartbeat_ms, listen, admin })) if self.privileged => {
                    let req = DumpRequest {
                        request_id: header.request_id,
                        server_id,
                        position,
                        heartbeat_ms,
                        peer: self.peer.clone(),
                        listen,
                        admin,
                    };
                    let Connection { reader, mut writer, node, registry, .. } = self;
                    return dump::serve(reader, &mut writer, &node, &registry, req, stop).await;
                }
                Ok((header, Request::Dump { .. })) => (
                    header.request_id,
                    Response::error(
                        ErrorCode::PermissionDenied,
                        "streaming the binlog needs a privileged connection (Auth with the admin token)",
                    ),
                ),
                Ok((header, request)) => (header.request_id, self.handle(request).await),
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
            self.send(request_id, response).await?;
        }
    }

    async fn handle(&mut self, request: Request) -> Response {
        match request {
            Request::Hello { .. } => Response::Hello {
                server_id: self.node.config().server_id,
                default_domain: self.node.config().default_domain,
                protocol_version: ferry_core::protocol::PROTOCOL_VERSION,
            },
            Request::Auth { token } => match &self.token {
                Some(expected) if expected.matches(&token) => {
                    self.privileged = true;
                    Response::AuthOk
                }
                Some(_) => Response::error(ErrorCode::PermissionDenied, "wrong admin token"),
                None => {
                    Response::error(ErrorCode::PermissionDenied, "this node has no admin token (--admin-token-file)")
                }
            },
            Request::Transact { domain, server_id, seq_no, ops } => {
                match self.node.execute_async(TxnRequest { domain, server_id, seq_no, ops }, self.privileged).await {
                    Ok(c) => Response::Committed { gtid: c.gtid, commit_id: c.commit_id, commit_ts_us: c.commit_ts_us },
                    Err(e) => txn_error(&e),
                }
            }
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
            Request::Dump { .. } => unreachable!("dump requests are served by run"),
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
        TxnError::NodeFailed(_) => ErrorCode::NodeFailed,
        TxnError::RowMismatch { .. } => ErrorCode::InvalidRequest,
    };
    Response::error(code, e.to_string())
}

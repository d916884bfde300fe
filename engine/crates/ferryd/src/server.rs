//! The binary protocol server: one OS thread per connection, as MariaDB does it. A transaction runs on its
//! connection's thread from frame to acknowledgement; group-commit followers simply block on their ticket, so a
//! commit costs no hand-off between thread pools. A semaphore-like counter bounds the connections.
//!
//! A bad frame gets an error frame and the connection goes on; only a frame too large to skip safely ends the
//! connection, after saying why.

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferry_core::gtid::GtidPosition;
use ferry_core::node::{Node, TxnError, TxnRequest};
use ferry_core::protocol::{split_frame, ErrorCode, FrameError, Request, Response, HEADER_BYTES, LENGTH_BYTES};
use parking_lot::Mutex;

use crate::auth::AdminToken;

/// Stack of each connection thread: transactions are shallow, and a thousand connections must fit.
const CONNECTION_STACK_BYTES: usize = 256 << 10;

/// The running protocol server; [`ProtocolServer::stop`] ends the accept loop and every connection.
pub struct ProtocolServer {
    stopping: Arc<AtomicBool>,
    /// Open connections, so stop can shut their sockets (which wakes their blocked reads).
    open: Arc<Mutex<Vec<(u64, TcpStream)>>>,
    local_addr: std::net::SocketAddr,
    accept_thread: Option<std::thread::JoinHandle<()>>,
}

impl ProtocolServer {
    pub fn start(listener: TcpListener, node: Arc<Node>, token: Option<AdminToken>) -> std::io::Result<Self> {
        let local_addr = listener.local_addr()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(Vec::new()));
        let accept_thread = std::thread::Builder::new().name("accept".into()).spawn({
            let (stopping, open) = (stopping.clone(), open.clone());
            move || accept_loop(listener, node, token, stopping, open)
        })?;
        Ok(ProtocolServer { stopping, open, local_addr, accept_thread: Some(accept_thread) })
    }

    pub fn stop(mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the accept loop with a connection of our own; it sees the flag and returns.
        let _ = TcpStream::connect_timeout(&self.local_addr, Duration::from_secs(1));
        if let Some(t) = self.accept_thread.take() {
            let _ = t.join();
        }
        for (_, stream) in self.open.lock().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    node: Arc<Node>,
    token: Option<AdminToken>,
    stopping: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<(u64, TcpStream)>>>,
) {
    let max = node.config().limits.connections_max;
    let active = Arc::new(AtomicUsize::new(0));
    let mut next_id = 0u64;
    for stream in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let mut stream = match stream {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        if active.fetch_add(1, Ordering::SeqCst) >= max {
            active.fetch_sub(1, Ordering::SeqCst);
            let msg = format!("too many connections: this node serves at most {max} at once");
            let _ = stream.write_all(&Response::error(ErrorCode::TooManyConnections, msg).encode(0));
            let _ = stream.shutdown(Shutdown::Both);
            continue;
        }
        next_id += 1;
        let id = next_id;
        if let Ok(clone) = stream.try_clone() {
            open.lock().push((id, clone));
        }
        let (node, token, active, open) = (node.clone(), token.clone(), active.clone(), open.clone());
        let spawned = std::thread::Builder::new().name(format!("conn-{id}")).stack_size(CONNECTION_STACK_BYTES).spawn(
            move || {
                let peer = stream.peer_addr().ok();
                if let Err(e) = Connection::new(stream, node, token).run() {
                    tracing::debug!(?peer, "connection ended: {e}");
                }
                open.lock().retain(|(i, _)| *i != id);
                active.fetch_sub(1, Ordering::SeqCst);
            },
        );
        if let Err(e) = spawned {
            tracing::error!("cannot start a connection thread: {e}");
        }
    }
}

struct Connection {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    node: Arc<Node>,
    token: Option<AdminToken>,
    /// Set by a successful `Auth`: the connection may then set server_id / seq_no.
    privileged: bool,
}

impl Connection {
    fn new(stream: TcpStream, node: Arc<Node>, token: Option<AdminToken>) -> Self {
        let reader = BufReader::new(stream.try_clone().expect("clone a TCP stream"));
        Connection { reader, writer: BufWriter::new(stream), node, token, privileged: false }
    }

    fn send(&mut self, request_id: u32, response: Response) -> std::io::Result<()> {
        self.writer.write_all(&response.encode(request_id))?;
        self.writer.flush()
    }

    fn run(mut self) -> std::io::Result<()> {
        let max = self.node.config().limits.frame_bytes_max;
        let mut frame = Vec::new();
        loop {
            let mut len = [0u8; LENGTH_BYTES];
            match self.reader.read_exact(&mut len) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e),
            }
            let len = u32::from_le_bytes(len) as usize;
            if len > max {
                let msg = format!("frame of {len} bytes exceeds the {max}-byte limit; closing the connection");
                self.send(0, Response::error(ErrorCode::FrameTooLarge, msg))?;
                return Ok(());
            }
            frame.resize(len, 0);
            self.reader.read_exact(&mut frame)?;
            let (request_id, response) = match Request::decode(&frame) {
                Ok((header, request)) => (header.request_id, self.handle(request)),
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
            self.send(request_id, response)?;
        }
    }

    fn handle(&mut self, request: Request) -> Response {
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
                match self.node.execute(TxnRequest { domain, server_id, seq_no, ops }, self.privileged) {
                    Ok(c) => Response::Committed { gtid: c.gtid, commit_id: c.commit_id, commit_ts_us: c.commit_ts_us },
                    Err(e) => txn_error(&e),
                }
            }
            Request::Get { table, key } => match self.node.read_row(&table, &key) {
                Ok(row) => Response::Row { row },
                Err(e) => txn_error(&e),
            },
            Request::WaitPosition { position, timeout_ms } => self.wait_position(&position, timeout_ms),
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
        }
    }

    fn wait_position(&self, text: &str, timeout_ms: u64) -> Response {
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
        match self.node.wait_for_position(&target, Duration::from_millis(timeout_ms)) {
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
        TxnError::TypeMismatch { .. } => ErrorCode::TypeMismatch,
        TxnError::Overflow { .. } => ErrorCode::Overflow,
        TxnError::Strict(_) => ErrorCode::StrictMode,
        TxnError::PermissionDenied(_) => ErrorCode::PermissionDenied,
        TxnError::NodeFailed(_) => ErrorCode::NodeFailed,
    };
    Response::error(code, e.to_string())
}

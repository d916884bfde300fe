//! The framed, versioned binary protocol between clients and `ferryd` (documented in docs/protocol.md).
//!
//! A frame is `length: u32 LE` (of everything after it) `| version: u8 | opcode: u8 | request_id: u32 | body`.
//! Layers stay strict: bytes → [`FrameHeader`] + body → typed [`Request`] / [`Response`]. Decoding never panics:
//! a malformed body is an error that names the offset, and the frame boundary is still known, so the server
//! answers with an error frame and keeps serving the connection.

use crate::codec::{DecodeError, Decoder, Encoder};
use crate::gtid::{DomainId, Gtid, SeqNo, ServerId};
use crate::row::{decode_op, decode_row, encode_op, encode_row, Row, RowOp};

/// Protocol version spoken by this build.
pub const PROTOCOL_VERSION: u8 = 1;
/// Bytes of the length prefix.
pub const LENGTH_BYTES: usize = 4;
/// Bytes after the length prefix that every frame has: version, opcode, request id.
pub const HEADER_BYTES: usize = 6;

/// Error codes carried by [`Response::Error`]; stable, documented, and matched by clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[repr(u16)]
pub enum ErrorCode {
    MalformedFrame = 1,
    UnsupportedVersion = 2,
    UnknownOperation = 3,
    FrameTooLarge = 4,
    TooManyConnections = 5,
    TxnTooLarge = 6,
    ReadOnly = 7,
    InvalidRequest = 8,
    TypeMismatch = 9,
    StrictMode = 10,
    PermissionDenied = 11,
    Timeout = 12,
    BadGtid = 13,
    NodeFailed = 14,
    Overflow = 15,
    ShuttingDown = 16,
    /// Replication: the replica's GTID was purged from the master's binlog.
    PositionPurged = 17,
    /// Replication: the replica is ahead of the master in a domain.
    ReplicaAhead = 18,
    /// Replication: the replica's GTID is not in the master's binlog (diverged), or falls in a hole.
    Diverged = 19,
    /// A binlog file could not be read (corrupt or missing).
    BinlogUnreadable = 20,
    /// The transaction's domain has used its last seq_no (u64::MAX): refused, nothing written.
    SeqNoExhausted = 21,
    /// An event of the transaction would exceed the node's largest-event limit (`--event-bytes-max`): refused
    /// before it reaches the commit queue, nothing written.
    EventTooLarge = 22,
    /// A change consumer took none of its stream while the master wrote `--consumer-stall-bytes-max` bytes of
    /// binlog: its subscription is ended (it resubscribes from the position it has).
    ConsumerCutOff = 23,
}

impl ErrorCode {
    pub fn from_u16(v: u16) -> Option<ErrorCode> {
        use ErrorCode::*;
        Some(match v {
            1 => MalformedFrame,
            2 => UnsupportedVersion,
            3 => UnknownOperation,
            4 => FrameTooLarge,
            5 => TooManyConnections,
            6 => TxnTooLarge,
            7 => ReadOnly,
            8 => InvalidRequest,
            9 => TypeMismatch,
            10 => StrictMode,
            11 => PermissionDenied,
            12 => Timeout,
            13 => BadGtid,
            14 => NodeFailed,
            15 => Overflow,
            16 => ShuttingDown,
            17 => PositionPurged,
            18 => ReplicaAhead,
            19 => Diverged,
            20 => BinlogUnreadable,
            21 => SeqNoExhausted,
            22 => EventTooLarge,
            23 => ConsumerCutOff,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use ErrorCode::*;
        match self {
            MalformedFrame => "MALFORMED_FRAME",
            UnsupportedVersion => "UNSUPPORTED_VERSION",
            UnknownOperation => "UNKNOWN_OPERATION",
            FrameTooLarge => "FRAME_TOO_LARGE",
            TooManyConnections => "TOO_MANY_CONNECTIONS",
            TxnTooLarge => "TXN_TOO_LARGE",
            ReadOnly => "READ_ONLY",
            InvalidRequest => "INVALID_REQUEST",
            TypeMismatch => "TYPE_MISMATCH",
            StrictMode => "STRICT_MODE",
            PermissionDenied => "PERMISSION_DENIED",
            Timeout => "TIMEOUT",
            BadGtid => "BAD_GTID",
            NodeFailed => "NODE_FAILED",
            Overflow => "OVERFLOW",
            ShuttingDown => "SHUTTING_DOWN",
            PositionPurged => "POSITION_PURGED",
            ReplicaAhead => "REPLICA_AHEAD",
            Diverged => "DIVERGED",
            BinlogUnreadable => "BINLOG_UNREADABLE",
            SeqNoExhausted => "SEQ_NO_EXHAUSTED",
            EventTooLarge => "EVENT_TOO_LARGE",
            ConsumerCutOff => "CONSUMER_CUT_OFF",
        }
    }
}

/// The fixed part of every frame after the length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub version: u8,
    pub opcode: u8,
    pub request_id: u32,
}

/// Requests a client can send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Identify the client; answered with the node's identity.
    Hello {
        client: String,
    },
    /// Present a token: the admin token makes the connection privileged (GTID overrides, binlog dumps); the
    /// consumer token gives it the change consumer's read-only role (subscriptions).
    Auth {
        token: String,
    },
    /// Run a transaction of row operations.
    Transact {
        domain: Option<DomainId>,
        server_id: Option<ServerId>,
        seq_no: Option<SeqNo>,
        ops: Vec<RowOp>,
    },
    /// Read one row.
    Get {
        table: String,
        key: String,
    },
    /// Wait until the node has reached `position` (GTID position text) or `timeout_ms` passes.
    WaitPosition {
        position: String,
        timeout_ms: u64,
    },
    /// Commit counters (for benchmarks).
    Stats,
    Ping,
    /// Whether the node takes client writes and whether it replicates (has a replication connection configured):
    /// what a client that follows the master asks before writing to a node it has not written to yet.
    Role,
    /// The GTID position at a legacy `(file, offset)` coordinate of this node's binlog (CHANGE MASTER with a
    /// file and offset); answered by `Reached`.
    PositionAt {
        file: String,
        offset: u64,
    },
    /// Replication, replica → master during a dump: received (in the relay log) up to this master coordinate.
    /// Semi-sync counts these confirmations. Not answered.
    Ack {
        file: String,
        offset: u64,
    },
    /// Replication: stream the binlog from `position` (privileged). The connection then carries only
    /// `ReplTxn` and `Heartbeat` responses (request id of the dump), until an error or the end of the connection.
    Dump {
        server_id: ServerId,
        position: String,
        heartbeat_ms: u32,
        /// The replica's own protocol and admin addresses (as it advertises them), so the master can list
        /// them for topology discovery; empty when unknown.
        listen: String,
        admin: String,
    },
    /// Change consumer: stream the committed transactions after `position` (or, when absent, after the node's
    /// binlog position now), of `domains` only (all when empty). Needs the consumer token (or the admin token).
    /// Answered by `Subscribed`, then the connection carries only `ReplTxn` and `Heartbeat` responses (request
    /// id of the subscription). The consumer is never counted for semi-sync and sends nothing more.
    Subscribe {
        /// The consumer's name, as the node lists it (1–64 bytes of `[A-Za-z0-9_.-]`).
        name: String,
        position: Option<String>,
        heartbeat_ms: u32,
        domains: Vec<DomainId>,
    },
    /// Clone (privileged): stream a consistent snapshot of the node's store (docs/protocol.md "Clone"). Answered
    /// by `CloneBegin`, then `CloneChunk`s in (table, key) order, then `CloneEnd`; the connection carries only
    /// those (request id of the clone). With `resume_after` and a snapshot still held under `clone_id`, the
    /// stream continues that snapshot after the given (table, key); otherwise a new snapshot starts from the
    /// beginning (`CloneBegin.resumed` false).
    Clone {
        /// The recipient's name for this clone (1–64 bytes of `[A-Za-z0-9_.-]`).
        clone_id: String,
        resume_after: Option<(String, String)>,
        /// Largest chunk the recipient wants (bytes of row data); the donor bounds it too.
        chunk_bytes: u32,
    },
}

/// One table of a clone's snapshot, as `CloneBegin` lists it: what the recipient checks its copy against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloneTable {
    pub name: String,
    pub rows: u64,
    /// The order-independent checksum of `store::TableChecksum`.
    pub checksum: u64,
}

/// Responses, each echoing the request id of the request it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Error {
        code: u16,
        message: String,
    },
    Hello {
        server_id: ServerId,
        default_domain: DomainId,
        protocol_version: u8,
    },
    AuthOk,
    Committed {
        gtid: Gtid,
        commit_id: u64,
        commit_ts_us: u64,
    },
    Row {
        row: Option<Row>,
    },
    Reached {
        position: String,
    },
    Stats {
        commits: u64,
        groups: u64,
        fsyncs: u64,
        bytes_written: u64,
    },
    Pong,
    /// Answers `Role`: the master of its domains is the node that is writable and replicates from nobody.
    Role {
        read_only: bool,
        replicates: bool,
    },
    /// Replication: one transaction's events as written in the master's binlog, and where it ends there;
    /// `ack` asks the replica to confirm receipt (semi-sync).
    ReplTxn {
        file: String,
        end_offset: u64,
        events: Vec<u8>,
        ack: bool,
    },
    /// Replication: sent when the stream is idle, so a replica can tell caught-up from stalled.
    Heartbeat {
        binlog_pos: String,
        file: String,
        offset: u64,
    },
    /// Answers `Subscribe`: the stream starts just after `position` (what was asked, or the node's binlog
    /// position when nothing was).
    Subscribed {
        position: String,
    },
    /// Answers `Clone`: the snapshot's GTID position (exactly the state its rows reflect), its size in chunk
    /// bytes (see `clone_chunk`), and every table's row count and checksum.
    CloneBegin {
        clone_id: String,
        /// True when this continues the snapshot an earlier stream of `clone_id` began.
        resumed: bool,
        position: String,
        bytes_total: u64,
        tables: Vec<CloneTable>,
    },
    /// Clone: rows of one table in key order, encoded as `clone_chunk` says, with the CRC32C of `data`.
    CloneChunk {
        table: String,
        data: Vec<u8>,
        crc32c: u32,
    },
    /// Clone: the snapshot was sent whole.
    CloneEnd,
}

/// Opcodes of requests (`0x01`…) and of their responses (`0x81`…, `R_ERROR` for any refusal); exported to
/// Python by ferry-py, so clients in other languages take them from here.
pub mod op {
    pub const HELLO: u8 = 0x01;
    pub const AUTH: u8 = 0x02;
    pub const TRANSACT: u8 = 0x10;
    pub const GET: u8 = 0x11;
    pub const WAIT_POSITION: u8 = 0x12;
    pub const STATS: u8 = 0x13;
    pub const PING: u8 = 0x14;
    pub const POSITION_AT: u8 = 0x15;
    pub const ROLE: u8 = 0x16;
    pub const DUMP: u8 = 0x20;
    pub const ACK: u8 = 0x21;
    pub const SUBSCRIBE: u8 = 0x22;
    pub const CLONE: u8 = 0x23;

    pub const R_ERROR: u8 = 0xFF;
    pub const R_HELLO: u8 = 0x81;
    pub const R_AUTH_OK: u8 = 0x82;
    pub const R_COMMITTED: u8 = 0x90;
    pub const R_ROW: u8 = 0x91;
    pub const R_REACHED: u8 = 0x92;
    pub const R_STATS: u8 = 0x93;
    pub const R_PONG: u8 = 0x94;
    pub const R_ROLE: u8 = 0x95;
    pub const R_REPL_TXN: u8 = 0xA0;
    pub const R_HEARTBEAT: u8 = 0xA1;
    pub const R_SUBSCRIBED: u8 = 0xA2;
    pub const R_CLONE_BEGIN: u8 = 0xA3;
    pub const R_CLONE_CHUNK: u8 = 0xA4;
    pub const R_CLONE_END: u8 = 0xA5;
}

/// Why a frame could not be turned into a request or response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {0} bytes is shorter than the {HEADER_BYTES}-byte header")]
    TooShort(usize),
    #[error("protocol version {0} is not supported (this node speaks {PROTOCOL_VERSION})")]
    UnsupportedVersion(u8),
    #[error("unknown operation 0x{0:02x}")]
    UnknownOperation(u8),
    #[error("malformed body: {0}")]
    Malformed(#[from] DecodeError),
}

impl FrameError {
    pub fn code(&self) -> ErrorCode {
        match self {
            FrameError::TooShort(_) | FrameError::Malformed(_) => ErrorCode::MalformedFrame,
            FrameError::UnsupportedVersion(_) => ErrorCode::UnsupportedVersion,
            FrameError::UnknownOperation(_) => ErrorCode::UnknownOperation,
        }
    }
}

/// Splits a frame (without its length prefix) into header and body.
pub fn split_frame(frame: &[u8]) -> Result<(FrameHeader, &[u8]), FrameError> {
    if frame.len() < HEADER_BYTES {
        return Err(FrameError::TooShort(frame.len()));
    }
    let header = FrameHeader {
        version: frame[0],
        opcode: frame[1],
        request_id: u32::from_le_bytes(frame[2..6].try_into().expect("4 bytes")),
    };
    Ok((header, &frame[HEADER_BYTES..]))
}

fn frame(opcode: u8, request_id: u32, body: impl FnOnce(&mut Encoder)) -> Vec<u8> {
    let mut enc = Encoder::new();
    enc.u32(0).u8(PROTOCOL_VERSION).u8(opcode).u32(request_id);
    body(&mut enc);
    let len = (enc.buf.len() - LENGTH_BYTES) as u32;
    enc.buf[..4].copy_from_slice(&len.to_le_bytes());
    enc.buf
}

impl Request {
    /// The whole frame, length prefix included.
    pub fn encode(&self, request_id: u32) -> Vec<u8> {
        match self {
            Request::Hello { client } => frame(op::HELLO, request_id, |e| {
                e.str(client);
            }),
            Request::Auth { token } => frame(op::AUTH, request_id, |e| {
                e.str(token);
            }),
            Request::Transact { domain, server_id, seq_no, ops } => frame(op::TRANSACT, request_id, |e| {
                e.opt(*domain, |e, v| {
                    e.u32(v);
                });
                e.opt(*server_id, |e, v| {
                    e.u32(v);
                });
                e.opt(*seq_no, |e, v| {
                    e.u64(v);
                });
                e.u32(ops.len() as u32);
                for o in ops {
                    encode_op(e, o);
                }
            }),
            Request::Get { table, key } => frame(op::GET, request_id, |e| {
                e.str(table).str(key);
            }),
            Request::WaitPosition { position, timeout_ms } => frame(op::WAIT_POSITION, request_id, |e| {
                e.str(position).u64(*timeout_ms);
            }),
            Request::Stats => frame(op::STATS, request_id, |_| {}),
            Request::Ping => frame(op::PING, request_id, |_| {}),
            Request::Role => frame(op::ROLE, request_id, |_| {}),
            Request::PositionAt { file, offset } => frame(op::POSITION_AT, request_id, |e| {
                e.str(file).u64(*offset);
            }),
            Request::Ack { file, offset } => frame(op::ACK, request_id, |e| {
                e.str(file).u64(*offset);
            }),
            Request::Dump { server_id, position, heartbeat_ms, listen, admin } => frame(op::DUMP, request_id, |e| {
                e.u32(*server_id).str(position).u32(*heartbeat_ms).str(listen).str(admin);
            }),
            Request::Subscribe { name, position, heartbeat_ms, domains } => frame(op::SUBSCRIBE, request_id, |e| {
                e.str(name);
                e.opt(position.as_deref(), |e, p| {
                    e.str(p);
                });
                e.u32(*heartbeat_ms).u32(domains.len() as u32);
                for d in domains {
                    e.u32(*d);
                }
            }),
            Request::Clone { clone_id, resume_after, chunk_bytes } => frame(op::CLONE, request_id, |e| {
                e.str(clone_id);
                e.opt(resume_after.as_ref(), |e, (table, key)| {
                    e.str(table).str(key);
                });
                e.u32(*chunk_bytes);
            }),
        }
    }

    /// Decodes a frame (without its length prefix).
    pub fn decode(frame: &[u8]) -> Result<(FrameHeader, Request), FrameError> {
        let (header, body) = split_frame(frame)?;
        if header.version != PROTOCOL_VERSION {
            return Err(FrameError::UnsupportedVersion(header.version));
        }
        let mut d = Decoder::new(body);
        let req = match header.opcode {
            op::HELLO => Request::Hello { client: d.str("client name")?.to_string() },
            op::AUTH => Request::Auth { token: d.str("token")?.to_string() },
            op::TRANSACT => {
                let domain = d.opt("domain flag", |d| d.u32("domain"))?;
                let server_id = d.opt("server_id flag", |d| d.u32("server_id"))?;
                let seq_no = d.opt("seq_no flag", |d| d.u64("seq_no"))?;
                // Every operation is at least a kind byte and two length prefixes.
                let n = d.count("operation count", 9)?;
                let mut ops = Vec::with_capacity(n);
                for _ in 0..n {
                    ops.push(decode_op(&mut d)?);
                }
                Request::Transact { domain, server_id, seq_no, ops }
            }
            op::GET => Request::Get { table: d.str("table name")?.to_string(), key: d.str("key")?.to_string() },
            op::WAIT_POSITION => {
                Request::WaitPosition { position: d.str("position")?.to_string(), timeout_ms: d.u64("timeout")? }
            }
            op::STATS => Request::Stats,
            op::PING => Request::Ping,
            op::ROLE => Request::Role,
            op::POSITION_AT => Request::PositionAt { file: d.str("file")?.to_string(), offset: d.u64("offset")? },
            op::ACK => Request::Ack { file: d.str("file")?.to_string(), offset: d.u64("offset")? },
            op::DUMP => Request::Dump {
                server_id: d.u32("server_id")?,
                position: d.str("position")?.to_string(),
                heartbeat_ms: d.u32("heartbeat interval")?,
                listen: d.str("listen address")?.to_string(),
                admin: d.str("admin address")?.to_string(),
            },
            op::SUBSCRIBE => {
                let name = d.str("consumer name")?.to_string();
                let position = d.opt("position flag", |d| d.str("position"))?.map(str::to_string);
                let heartbeat_ms = d.u32("heartbeat interval")?;
                let n = d.count("domain count", 4)?;
                let mut domains = Vec::with_capacity(n);
                for _ in 0..n {
                    domains.push(d.u32("domain")?);
                }
                Request::Subscribe { name, position, heartbeat_ms, domains }
            }
            op::CLONE => Request::Clone {
                clone_id: d.str("clone id")?.to_string(),
                resume_after: d.opt("resume flag", |d| {
                    Ok((d.str("resume table")?.to_string(), d.str("resume key")?.to_string()))
                })?,
                chunk_bytes: d.u32("chunk bytes")?,
            },
            other => return Err(FrameError::UnknownOperation(other)),
        };
        d.finish("request")?;
        Ok((header, req))
    }
}

impl Response {
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Response {
        Response::Error { code: code as u16, message: message.into() }
    }

    pub fn encode(&self, request_id: u32) -> Vec<u8> {
        match self {
            Response::Error { code, message } => frame(op::R_ERROR, request_id, |e| {
                e.u16(*code).str(message);
            }),
            Response::Hello { server_id, default_domain, protocol_version } => frame(op::R_HELLO, request_id, |e| {
                e.u32(*server_id).u32(*default_domain).u8(*protocol_version);
            }),
            Response::AuthOk => frame(op::R_AUTH_OK, request_id, |_| {}),
            Response::Committed { gtid, commit_id, commit_ts_us } => frame(op::R_COMMITTED, request_id, |e| {
                e.gtid(*gtid).u64(*commit_id).u64(*commit_ts_us);
            }),
            Response::Row { row } => frame(op::R_ROW, request_id, |e| {
                e.opt(row.as_ref(), encode_row);
            }),
            Response::Reached { position } => frame(op::R_REACHED, request_id, |e| {
                e.str(position);
            }),
            Response::Stats { commits, groups, fsyncs, bytes_written } => frame(op::R_STATS, request_id, |e| {
                e.u64(*commits).u64(*groups).u64(*fsyncs).u64(*bytes_written);
            }),
            Response::Pong => frame(op::R_PONG, request_id, |_| {}),
            Response::Role { read_only, replicates } => frame(op::R_ROLE, request_id, |e| {
                e.u8(u8::from(*read_only)).u8(u8::from(*replicates));
            }),
            Response::ReplTxn { file, end_offset, events, ack } => frame(op::R_REPL_TXN, request_id, |e| {
                e.str(file).u64(*end_offset).bytes(events).u8(u8::from(*ack));
            }),
            Response::Heartbeat { binlog_pos, file, offset } => frame(op::R_HEARTBEAT, request_id, |e| {
                e.str(binlog_pos).str(file).u64(*offset);
            }),
            Response::Subscribed { position } => frame(op::R_SUBSCRIBED, request_id, |e| {
                e.str(position);
            }),
            Response::CloneBegin { clone_id, resumed, position, bytes_total, tables } => {
                frame(op::R_CLONE_BEGIN, request_id, |e| {
                    e.str(clone_id).u8(u8::from(*resumed)).str(position).u64(*bytes_total).u32(tables.len() as u32);
                    for t in tables {
                        e.str(&t.name).u64(t.rows).u64(t.checksum);
                    }
                })
            }
            Response::CloneChunk { table, data, crc32c } => frame(op::R_CLONE_CHUNK, request_id, |e| {
                e.str(table).bytes(data).u32(*crc32c);
            }),
            Response::CloneEnd => frame(op::R_CLONE_END, request_id, |_| {}),
        }
    }

    pub fn decode(frame: &[u8]) -> Result<(FrameHeader, Response), FrameError> {
        let (header, body) = split_frame(frame)?;
        if header.version != PROTOCOL_VERSION {
            return Err(FrameError::UnsupportedVersion(header.version));
        }
        let mut d = Decoder::new(body);
        let resp = match header.opcode {
            op::R_ERROR => Response::Error { code: d.u16("error code")?, message: d.str("error message")?.to_string() },
            op::R_HELLO => Response::Hello {
                server_id: d.u32("server_id")?,
                default_domain: d.u32("default domain")?,
                protocol_version: d.u8("protocol version")?,
            },
            op::R_AUTH_OK => Response::AuthOk,
            op::R_COMMITTED => Response::Committed {
                gtid: d.gtid("GTID")?,
                commit_id: d.u64("commit id")?,
                commit_ts_us: d.u64("commit timestamp")?,
            },
            op::R_ROW => Response::Row { row: d.opt("row flag", decode_row)? },
            op::R_REACHED => Response::Reached { position: d.str("position")?.to_string() },
            op::R_STATS => Response::Stats {
                commits: d.u64("commits")?,
                groups: d.u64("groups")?,
                fsyncs: d.u64("fsyncs")?,
                bytes_written: d.u64("bytes written")?,
            },
            op::R_PONG => Response::Pong,
            op::R_ROLE => {
                Response::Role { read_only: d.bool("read-only flag")?, replicates: d.bool("replicates flag")? }
            }
            op::R_REPL_TXN => Response::ReplTxn {
                file: d.str("file")?.to_string(),
                end_offset: d.u64("end offset")?,
                events: d.bytes("events")?.to_vec(),
                ack: d.bool("ack flag")?,
            },
            op::R_HEARTBEAT => Response::Heartbeat {
                binlog_pos: d.str("binlog position")?.to_string(),
                file: d.str("file")?.to_string(),
                offset: d.u64("offset")?,
            },
            op::R_SUBSCRIBED => Response::Subscribed { position: d.str("position")?.to_string() },
            op::R_CLONE_BEGIN => {
                let clone_id = d.str("clone id")?.to_string();
                let resumed = d.bool("resumed flag")?;
                let position = d.str("position")?.to_string();
                let bytes_total = d.u64("bytes total")?;
                // A table is at least a name's length prefix and two u64s.
                let n = d.count("table count", 20)?;
                let mut tables = Vec::with_capacity(n);
                for _ in 0..n {
                    tables.push(CloneTable {
                        name: d.str("table name")?.to_string(),
                        rows: d.u64("row count")?,
                        checksum: d.u64("table checksum")?,
                    });
                }
                Response::CloneBegin { clone_id, resumed, position, bytes_total, tables }
            }
            op::R_CLONE_CHUNK => Response::CloneChunk {
                table: d.str("table name")?.to_string(),
                data: d.bytes("chunk data")?.to_vec(),
                crc32c: d.u32("chunk checksum")?,
            },
            op::R_CLONE_END => Response::CloneEnd,
            other => return Err(FrameError::UnknownOperation(other)),
        };
        d.finish("response")?;
        Ok((header, resp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::Value;
    use proptest::prelude::*;

    fn body(frame: &[u8]) -> &[u8] {
        let len = u32::from_le_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4, "length prefix covers the rest of the frame");
        &frame[4..]
    }

    #[test]
    fn requests_round_trip() {
        let row: Row = [("n".to_string(), Value::Int(1))].into();
        let reqs = vec![
            Request::Hello { client: "bench".into() },
            Request::Auth { token: "secret".into() },
            Request::Transact {
                domain: Some(3),
                server_id: None,
                seq_no: Some(9),
                ops: vec![
                    RowOp::Put { table: "t".into(), key: "k".into(), row },
                    RowOp::Increment { table: "t".into(), key: "c".into(), field: "n".into(), by: -2 },
                    RowOp::Delete { table: "t".into(), key: "z".into() },
                ],
            },
            Request::Get { table: "t".into(), key: "k".into() },
            Request::WaitPosition { position: "0-1-5".into(), timeout_ms: 100 },
            Request::Stats,
            Request::Ping,
            Request::Role,
            Request::Dump {
                server_id: 3,
                position: "0-1-5,1-2-3".into(),
                heartbeat_ms: 500,
                listen: "10.0.0.3:7301".into(),
                admin: "10.0.0.3:7401".into(),
            },
            Request::PositionAt { file: "ferry-bin.000001".into(), offset: 4 },
            Request::Ack { file: "ferry-bin.000001".into(), offset: 99 },
            Request::Subscribe {
                name: "cache-invalidator".into(),
                position: Some("0-1-5,1-2-3".into()),
                heartbeat_ms: 500,
                domains: vec![1, 0],
            },
            Request::Subscribe { name: "indexer".into(), position: None, heartbeat_ms: 1000, domains: vec![] },
            Request::Clone { clone_id: "c1".into(), resume_after: None, chunk_bytes: 65536 },
            Request::Clone { clone_id: "c1".into(), resume_after: Some(("t".into(), "k9".into())), chunk_bytes: 1 },
        ];
        for (i, req) in reqs.into_iter().enumerate() {
            let bytes = req.encode(i as u32);
            let (h, back) = Request::decode(body(&bytes)).unwrap();
            assert_eq!((h.request_id, back), (i as u32, req));
        }
    }

    #[test]
    fn responses_round_trip() {
        let resps = vec![
            Response::error(ErrorCode::ReadOnly, "read-only"),
            Response::Hello { server_id: 1, default_domain: 0, protocol_version: 1 },
            Response::AuthOk,
            Response::Committed { gtid: Gtid::new(0, 1, 2), commit_id: 3, commit_ts_us: 4 },
            Response::Row { row: None },
            Response::Reached { position: "0-1-2".into() },
            Response::Stats { commits: 1, groups: 2, fsyncs: 3, bytes_written: 4 },
            Response::Pong,
            Response::Role { read_only: false, replicates: true },
            Response::ReplTxn { file: "ferry-bin.000002".into(), end_offset: 900, events: vec![1, 2, 3], ack: true },
            Response::Heartbeat { binlog_pos: "0-1-5".into(), file: "ferry-bin.000002".into(), offset: 900 },
            Response::Subscribed { position: "0-1-5".into() },
            Response::CloneBegin {
                clone_id: "c1".into(),
                resumed: true,
                position: "0-1-5".into(),
                bytes_total: 900,
                tables: vec![CloneTable { name: "t".into(), rows: 3, checksum: 77 }],
            },
            Response::CloneChunk { table: "t".into(), data: vec![0, 0, 0, 0], crc32c: 9 },
            Response::CloneEnd,
        ];
        for resp in resps {
            let bytes = resp.encode(7);
            assert_eq!(Response::decode(body(&bytes)).unwrap().1, resp);
        }
    }

    #[test]
    fn bad_frames_get_precise_errors() {
        assert_eq!(Request::decode(&[1, 2]).unwrap_err(), FrameError::TooShort(2));
        assert_eq!(Request::decode(&[9, op::PING, 0, 0, 0, 0]).unwrap_err(), FrameError::UnsupportedVersion(9));
        assert_eq!(Request::decode(&[1, 0x77, 0, 0, 0, 0]).unwrap_err(), FrameError::UnknownOperation(0x77));
        let mut ping = Request::Ping.encode(1)[4..].to_vec();
        ping.push(0);
        assert!(matches!(Request::decode(&ping).unwrap_err(), FrameError::Malformed(e) if e.what.contains("trailing")));
        let get = Request::Get { table: "t".into(), key: "k".into() }.encode(1);
        let err = Request::decode(&get[4..get.len() - 1]).unwrap_err();
        assert_eq!(err.code(), ErrorCode::MalformedFrame);
        assert!(err.to_string().contains("truncated key"), "{err}");
    }

    #[test]
    fn error_codes_round_trip_by_number() {
        for v in 1..=23u16 {
            assert_eq!(ErrorCode::from_u16(v).unwrap() as u16, v);
        }
        assert_eq!(ErrorCode::from_u16(0), None);
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_frames_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = Request::decode(&bytes);
            let _ = Response::decode(&bytes);
        }
    }
}

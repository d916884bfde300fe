//! The donor's side of a clone: the snapshots it holds, and the stream of one (`Request::Clone`, privileged).
//!
//! A snapshot is taken at the first request of a clone id ([`ferry_core::node::Node::clone_source`]: the rows
//! and the exact position they reflect), summarised (every table's rows and checksum, the bytes of the whole
//! snapshot) and then read in (table, key) order into chunks. It is held after its recipient disconnects, for
//! `--clone-retention-s`, so that a resume with the same clone id continues the same snapshot after the
//! (table, key) the recipient names — also after it was sent whole, since the socket's buffers may have taken
//! its end while the recipient, throttled or paused, still had it to read. A snapshot streams until its
//! recipient closes the connection (after `CloneEnd` too). At most `--clone-snapshots-max` are held (streaming or
//! waiting for a resume): one more evicts the longest-idle waiting one, or is refused when all are streaming. A held snapshot keeps its redb read transaction (and the in-memory layers it froze) alive.
//!
//! Writes to the recipient are not timed out: a recipient that throttles or pauses simply reads slowly, and the
//! snapshot stream waits in the socket.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry_core::clone_chunk;
use ferry_core::node::Node;
use ferry_core::protocol::{CloneTable, ErrorCode, Response};
use ferry_core::store::{CloneSource, CloneSummary};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

/// Bounds of a chunk's row data: the recipient's wish is kept within these.
pub const CHUNK_BYTES_MIN: u32 = 1024;
pub const CHUNK_BYTES_MAX: u32 = 1 << 20;

/// The donor's settings (`--clone-retention-s`, `--clone-snapshots-max`).
#[derive(Debug, Clone, Copy)]
pub struct DonorLimits {
    pub retention: Duration,
    pub snapshots_max: usize,
}

/// One held snapshot.
struct Held {
    source: Arc<Mutex<CloneSource>>,
    position: String,
    summary: Arc<CloneSummary>,
    /// None while a connection streams it; else since when it waits for a resume.
    idle_since: Option<Instant>,
}

/// The snapshots this node holds for clones.
pub struct Donations {
    limits: DonorLimits,
    held: Mutex<HashMap<String, Held>>,
}

/// A snapshot taken out for streaming; given back (idle) when dropped.
struct Lease<'a> {
    donations: &'a Donations,
    clone_id: String,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(h) = self.donations.held.lock().get_mut(&self.clone_id) {
            h.idle_since = Some(Instant::now());
        }
    }
}

/// What a clone request is answered with before its chunks.
struct Begun {
    source: Arc<Mutex<CloneSource>>,
    position: String,
    summary: Arc<CloneSummary>,
    resumed: bool,
}

impl Donations {
    pub fn new(limits: DonorLimits) -> Self {
        Donations { limits, held: Mutex::new(HashMap::new()) }
    }

    fn expire(&self, held: &mut HashMap<String, Held>) {
        let retention = self.limits.retention;
        held.retain(|_, h| h.idle_since.is_none_or(|t| t.elapsed() < retention));
    }

    /// The held snapshot of `clone_id` (resumed), or a place for a new one; the error is the refusal's message.
    fn take_held(&self, clone_id: &str) -> Result<Option<Begun>, String> {
        let mut held = self.held.lock();
        self.expire(&mut held);
        if let Some(h) = held.get_mut(clone_id) {
            if h.idle_since.is_none() {
                return Err(format!("clone {clone_id:?} is being streamed on another connection"));
            }
            h.idle_since = None;
            return Ok(Some(Begun {
                source: h.source.clone(),
                position: h.position.clone(),
                summary: h.summary.clone(),
                resumed: true,
            }));
        }
        if held.len() >= self.limits.snapshots_max {
            let oldest =
                held.iter().filter_map(|(id, h)| h.idle_since.map(|t| (t, id.clone()))).min().map(|(_, id)| id);
            match oldest {
                Some(id) => {
                    tracing::info!(clone_id = %id, "dropping a held clone snapshot to make room (--clone-snapshots-max)");
                    held.remove(&id);
                }
                None => {
                    return Err(format!(
                        "this node already streams {} clone snapshot(s), its limit (--clone-snapshots-max)",
                        held.len()
                    ))
                }
            }
        }
        Ok(None)
    }

    fn hold(&self, clone_id: &str, begun: &Begun) {
        self.held.lock().insert(
            clone_id.to_string(),
            Held {
                source: begun.source.clone(),
                position: begun.position.clone(),
                summary: begun.summary.clone(),
                idle_since: None,
            },
        );
    }
}

/// Whether a clone id is acceptable: 1–64 bytes of `[A-Za-z0-9_.-]`.
pub fn valid_clone_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// A clone request, as the connection received it.
pub struct CloneRequest {
    pub request_id: u32,
    pub clone_id: String,
    pub resume_after: Option<(String, String)>,
    pub chunk_bytes: u32,
    pub peer: String,
}

/// Streams a snapshot on `writer` until it is sent whole, the recipient goes, or the node stops; once sent whole,
/// waits for the recipient to close the connection (`reader` ends): until then the snapshot counts as streaming
/// (the socket's buffers may still hold its end).
pub async fn serve<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    reader: &mut R,
    writer: &mut W,
    node: &Arc<Node>,
    donations: &Arc<Donations>,
    req: CloneRequest,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let id = req.request_id;
    let refuse = |code: ErrorCode, message: String| Response::error(code, message).encode(id);
    if !valid_clone_id(&req.clone_id) {
        let msg = format!("clone id {:?} is not 1-64 bytes of [A-Za-z0-9_.-]", req.clone_id);
        writer.write_all(&refuse(ErrorCode::InvalidRequest, msg)).await?;
        return writer.flush().await;
    }
    let held = match donations.take_held(&req.clone_id) {
        Ok(held) => held,
        Err(why) => {
            writer.write_all(&refuse(ErrorCode::TooManyConnections, why)).await?;
            return writer.flush().await;
        }
    };
    let begun = match held {
        Some(begun) => begun,
        None => {
            let node = node.clone();
            let taken = tokio::task::spawn_blocking(move || -> Result<Begun, String> {
                let (position, source) = node.clone_source().map_err(|e| e.to_string())?;
                let summary = source.summary().map_err(|e| e.to_string())?;
                Ok(Begun {
                    source: Arc::new(Mutex::new(source)),
                    position: position.to_string(),
                    summary: Arc::new(summary),
                    resumed: false,
                })
            })
            .await
            .map_err(std::io::Error::other)?;
            match taken {
                Ok(begun) => {
                    donations.hold(&req.clone_id, &begun);
                    begun
                }
                Err(why) => {
                    writer.write_all(&refuse(ErrorCode::NodeFailed, format!("taking the snapshot: {why}"))).await?;
                    return writer.flush().await;
                }
            }
        }
    };
    let _lease = Lease { donations, clone_id: req.clone_id.clone() };
    tracing::info!(
        clone_id = %req.clone_id, peer = %req.peer, resumed = begun.resumed, position = %begun.position,
        bytes_total = begun.summary.bytes_total, "streaming a clone snapshot"
    );
    let tables = begun
        .summary
        .tables
        .iter()
        .map(|(name, sum)| CloneTable { name: name.clone(), rows: sum.rows, checksum: sum.checksum })
        .collect();
    let head = Response::CloneBegin {
        clone_id: req.clone_id.clone(),
        resumed: begun.resumed,
        position: begun.position.clone(),
        bytes_total: begun.summary.bytes_total,
        tables,
    };
    writer.write_all(&head.encode(id)).await?;
    writer.flush().await?;
    // A resume of a new snapshot starts from its beginning: the recipient starts over.
    let after = if begun.resumed { req.resume_after.clone() } else { None };
    let chunk_bytes = req.chunk_bytes.clamp(CHUNK_BYTES_MIN, CHUNK_BYTES_MAX) as u64;
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(2);
    let source = begun.source.clone();
    let tables: Vec<String> = begun.summary.tables.keys().cloned().collect();
    let producer = tokio::task::spawn_blocking(move || produce(&source.lock(), &tables, after, chunk_bytes, id, &tx));
    loop {
        let frame = tokio::select! {
            frame = rx.recv() => frame,
            _ = stop.changed() => {
                let bye = refuse(ErrorCode::ShuttingDown, "the node is shutting down".into());
                let _ = writer.write_all(&bye).await;
                return writer.flush().await;
            }
        };
        let Some(frame) = frame else { break };
        writer.write_all(&frame).await?;
        writer.flush().await?;
    }
    drop(rx);
    match producer.await.map_err(std::io::Error::other)? {
        Ok(()) => {
            writer.write_all(&Response::CloneEnd.encode(id)).await?;
            writer.flush().await?;
            tracing::info!(clone_id = %req.clone_id, "clone snapshot sent whole");
            let mut byte = [0u8; 1];
            tokio::select! {
                _ = reader.read(&mut byte) => {}
                _ = stop.changed() => {}
            }
            Ok(())
        }
        Err(why) => {
            writer.write_all(&refuse(ErrorCode::NodeFailed, format!("reading the snapshot: {why}"))).await?;
            writer.flush().await
        }
    }
}

/// Reads the snapshot after `after` into chunk frames of about `chunk_bytes`, table by table, into `tx`; ends
/// early (Ok) when the receiving side is gone.
fn produce(
    source: &CloneSource,
    tables: &[String],
    after: Option<(String, String)>,
    chunk_bytes: u64,
    request_id: u32,
    tx: &mpsc::Sender<Vec<u8>>,
) -> Result<(), String> {
    let start = match &after {
        Some((table, _)) => tables.iter().position(|t| t >= table).unwrap_or(tables.len()),
        None => 0,
    };
    for table in &tables[start..] {
        let mut from: Option<String> = match &after {
            Some((t, key)) if t == table => Some(key.clone()),
            _ => None,
        };
        loop {
            let mut rows: Vec<(String, Vec<u8>)> = Vec::new();
            let mut bytes = 0;
            source
                .rows_after(table, from.as_deref(), &mut |key, row| {
                    rows.push((key.to_string(), row.to_vec()));
                    bytes += clone_chunk::row_chunk_bytes(key, row);
                    bytes < chunk_bytes
                })
                .map_err(|e| e.to_string())?;
            let Some((last, _)) = rows.last() else { break };
            from = Some(last.clone());
            let (data, crc32c) = clone_chunk::encode(&rows);
            let frame = Response::CloneChunk { table: table.clone(), data, crc32c }.encode(request_id);
            if tx.blocking_send(frame).is_err() {
                return Ok(());
            }
        }
    }
    Ok(())
}

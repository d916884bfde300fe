//! The master side of replication: a `Dump` request turns a protocol connection into a binlog stream. The start
//! is found by the GTID rules of `ferry_core::binlog::seek` (an error names the domain and both GTIDs and ends
//! the stream); transactions are sent as soon as their group is durable, and heartbeats when idle or while the start
//! is being found.

use std::sync::Arc;
use std::time::Duration;

use ferry_core::binlog::seek::{find_start, SeekError};
use ferry_core::binlog::stream::{BinlogStream, StreamedTxn};
use ferry_core::binlog::{file_name, files_at, BinlogCoord, BinlogError};
use ferry_core::gtid::GtidPosition;
use ferry_core::node::Node;
use ferry_core::protocol::{ErrorCode, Request, Response};
use ferry_core::semisync::SemiSync;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use crate::frames::{read_frame, FrameLimits, Next};
use crate::replicas::{ReplicaInfo, ReplicaRegistry};

/// Most transactions read from disk per batch before they are sent (the batch's bytes are bounded by
/// `--dump-buffer-bytes-max`).
const BATCH_TXNS_MAX: usize = 512;
/// Shortest and longest heartbeat interval a replica may ask for.
pub(crate) const HEARTBEAT_MS_MIN: u32 = 50;
pub(crate) const HEARTBEAT_MS_MAX: u32 = 60_000;

pub struct DumpRequest {
    pub request_id: u32,
    pub server_id: u32,
    pub position: String,
    pub heartbeat_ms: u32,
    pub peer: String,
    /// The replica's advertised addresses.
    pub listen: String,
    pub admin: String,
    /// `--protocol-frame-timeout-s`: a confirmation once begun must arrive whole within it.
    pub frame_timeout: Duration,
}

pub(crate) fn seek_error(e: &SeekError) -> Response {
    let code = match e {
        SeekError::Purged { .. } => ErrorCode::PositionPurged,
        SeekError::ReplicaAhead { .. } => ErrorCode::ReplicaAhead,
        SeekError::Diverged { .. } | SeekError::Hole { .. } => ErrorCode::Diverged,
        SeekError::Binlog(_) => ErrorCode::BinlogUnreadable,
    };
    Response::error(code, e.to_string())
}

/// Streams until the replica goes away, an error, or shutdown. `reader` carries the replica's receipt
/// confirmations (semi-sync).
pub async fn serve<R: AsyncReadExt + Unpin + Send + 'static, W: AsyncWriteExt + Unpin>(
    mut reader: R,
    writer: &mut W,
    node: &Arc<Node>,
    registry: &ReplicaRegistry,
    req: DumpRequest,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let id = req.request_id;
    let send = |resp: Response| resp.encode(id);
    let position: GtidPosition = match req.position.parse() {
        Ok(p) => p,
        Err(e) => {
            writer.write_all(&send(Response::error(ErrorCode::BadGtid, e.to_string()))).await?;
            return writer.flush().await;
        }
    };
    let heartbeat = Duration::from_millis(u64::from(req.heartbeat_ms.clamp(HEARTBEAT_MS_MIN, HEARTBEAT_MS_MAX)));
    // Finding the start reads the binlog from the chosen file's header to the replica's GTIDs: on a long file, longer
    // than the replica waits for a sign of life. Heartbeats go out meanwhile, as when the stream is idle.
    let opened = {
        let open = open_stream(node, position.clone());
        tokio::pin!(open);
        loop {
            tokio::select! {
                opened = &mut open => break opened,
                _ = tokio::time::sleep(heartbeat) => {
                    writer.write_all(&send(heartbeat_now(node))).await?;
                    writer.flush().await?;
                }
            }
        }
    };
    let mut stream = match opened {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(replica = req.server_id, peer = %req.peer, "refused a replica: {e}");
            writer.write_all(&send(seek_error(&e))).await?;
            return writer.flush().await;
        }
    };
    tracing::info!(replica = req.server_id, peer = %req.peer, from = %position, "replica connected");
    let info = ReplicaInfo {
        server_id: req.server_id,
        address: req.peer.clone(),
        listen: req.listen.clone(),
        admin: req.admin.clone(),
        start_position: position.to_string(),
        sent_position: position.to_string(),
        sent_file: String::new(),
        sent_offset: 0,
        reading_file: file_name(stream.file_seq()),
        connected_at_us: ferry_core::binlog::writer::now_us(),
        transactions_sent: 0,
        buffered_bytes: 0,
        buffered_bytes_peak: 0,
    };
    let registration = registry.register(info, position);
    let wants_acks = node.config().commit.durability.waits_for_replicas();
    let semi_sync = node.semi_sync().cloned();
    if let Some(semi) = &semi_sync {
        semi.connect(registration.id(), ferry_core::binlog::BinlogCoord { file_seq: 0, offset: 0 });
    }
    let _leave = SemiSyncLeave(semi_sync.clone(), registration.id());
    // Confirmations from the replica arrive on the same connection.
    let acks = {
        let (semi, node, id) = (semi_sync.clone(), node.clone(), registration.id());
        // The replica sends only confirmations, and only with semi-sync: no idle timeout.
        let limits = FrameLimits { bytes_max: REPLICA_FRAME_BYTES_MAX, idle: None, frame: req.frame_timeout };
        tokio::spawn(async move {
            let mut frame = Vec::new();
            while let Ok(Next::Frame) = read_frame(&mut reader, &mut frame, limits).await {
                if let (Some(semi), Ok((_, Request::Ack { file, offset }))) = (&semi, Request::decode(&frame)) {
                    if let Some(file_seq) = ferry_core::binlog::file_seq(&file) {
                        semi.ack(id, ferry_core::binlog::BinlogCoord { file_seq, offset });
                        semi.maybe_recover(node.binlog_end());
                    }
                }
            }
        })
    };
    let _stop_acks = AbortOnDrop(acks);
    // What this stream may hold in memory: a batch is read only once the previous one is in the socket, and
    // reading stops when the batch reaches the bound (a transaction is never split).
    let buffer_bytes_max = node.config().limits.dump_buffer_bytes_max;
    loop {
        if *stop.borrow() {
            writer.write_all(&send(Response::error(ErrorCode::ShuttingDown, "the master is shutting down"))).await?;
            return writer.flush().await;
        }
        let end = node.binlog_end();
        let (back, batch) = read_batch(stream, end, buffer_bytes_max).await;
        stream = back;
        registration.reading(&file_name(stream.file_seq()));
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(replica = req.server_id, "binlog read failed while streaming: {e}");
                writer.write_all(&send(Response::error(ErrorCode::BinlogUnreadable, e.to_string()))).await?;
                return writer.flush().await;
            }
        };
        if batch.is_empty() {
            let seen = end;
            tokio::select! {
                _ = node.wait_for_binlog_growth(seen, heartbeat) => {}
                _ = stop.changed() => {}
            }
            if node.binlog_end() <= seen {
                writer.write_all(&send(heartbeat_now(node))).await?;
                writer.flush().await?;
            }
            continue;
        }
        let last = batch.len() - 1;
        registration.buffered(batch.iter().map(|t| t.raw.len() as u64).sum());
        for (i, txn) in batch.into_iter().enumerate() {
            let file = file_name(txn.end.file_seq);
            let (gtid, end_offset, bytes) = (txn.header.gtid, txn.end.offset, txn.raw.len() as u64);
            let ack = wants_acks && i == last;
            let frame = send(Response::ReplTxn { file: file.clone(), end_offset, events: txn.raw, ack });
            writer.write_all(&frame).await?;
            if i == last {
                // The tail of a frame can wait in the writer's buffer: the batch is sent once the kernel has it.
                writer.flush().await?;
            }
            registration.sent(gtid, &file, end_offset, bytes);
        }
    }
}

/// A heartbeat: the master's position and the end of its binlog now.
fn heartbeat_now(node: &Node) -> Response {
    let end = node.binlog_end();
    Response::Heartbeat { binlog_pos: node.position().to_string(), file: file_name(end.file_seq), offset: end.offset }
}

/// Finds where a stream from `position` starts (the GTID rules of `ferry_core::binlog::seek`) and opens it.
pub(crate) async fn open_stream(node: &Arc<Node>, position: GtidPosition) -> Result<BinlogStream, SeekError> {
    let node = node.clone();
    tokio::task::spawn_blocking(move || {
        ferry_core::fault::delay(ferry_core::fault::sites::DUMP_SEEK);
        let dir = node.binlog_dir();
        let files = files_at(&dir).map_err(SeekError::Binlog)?;
        let start = find_start(&files, &position, &node.binlog_state(), node.config().commit.strict_mode)?;
        BinlogStream::open(&dir, &files, start).map_err(SeekError::Binlog)
    })
    .await
    .expect("stream open task")
}

/// Reads the next transactions of `stream` up to `end`: at most [`BATCH_TXNS_MAX`], and no more once they
/// reach `bytes_max` (a transaction is never split). Gives the stream back with them.
pub(crate) async fn read_batch(
    mut stream: BinlogStream,
    end: BinlogCoord,
    bytes_max: u64,
) -> (BinlogStream, Result<Vec<StreamedTxn>, BinlogError>) {
    tokio::task::spawn_blocking(move || {
        let mut batch: Vec<StreamedTxn> = Vec::new();
        let mut bytes = 0u64;
        let result = loop {
            if batch.len() >= BATCH_TXNS_MAX || bytes >= bytes_max {
                break Ok(());
            }
            match stream.next(end) {
                Ok(Some(txn)) => {
                    bytes += txn.raw.len() as u64;
                    batch.push(txn);
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        (stream, result.map(|_| batch))
    })
    .await
    .expect("binlog read task")
}

/// Largest frame a replica may send during a dump (confirmations are tiny).
const REPLICA_FRAME_BYTES_MAX: usize = 4096;

/// Ends the confirmation reader when the stream ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Takes a replica out of the semi-sync count when its stream ends.
struct SemiSyncLeave(Option<Arc<SemiSync>>, u64);

impl Drop for SemiSyncLeave {
    fn drop(&mut self) {
        if let Some(semi) = &self.0 {
            semi.disconnect(self.1);
        }
    }
}

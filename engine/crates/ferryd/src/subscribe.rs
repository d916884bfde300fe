//! The change consumer's stream: a `Subscribe` (consumer or admin token) turns a protocol connection into a
//! stream of the transactions committed after a GTID position — of the domains asked for — exactly as replicas
//! get them (`ReplTxn`, heartbeats when idle), but a consumer is not a replica: it is never counted for
//! semi-sync (client commits never wait for it), never holds binlog files back from purges or expiry, and is
//! listed apart (`GET /v1/consumers`).
//!
//! Nothing a failover could lose: with semi-sync, a consumer is sent a transaction of this node's clients only
//! once its group's wait for the replicas' confirmations ended (confirmed, or timed out and fallen back to
//! asynchronous) — the stream reads up to [`Node::consumers_end`], and a subscription "from now" starts at
//! [`Node::consumers_position`]. Transactions this node applied by replication are sent as soon as they are in its
//! binlog (they are on this replica, which a failover would promote or level from).
//!
//! Bounded on the master: the stream reads the binlog files, never the commit path, in batches of at most
//! `--dump-buffer-bytes-max`, and reads the next batch only once the connection has taken the previous one.
//! A consumer that stops reading therefore holds one batch; once the master has written
//! `--consumer-stall-bytes-max` bytes of binlog while its connection took nothing, it is cut off: the node logs
//! it, lists it under `cut_off`, and — if the connection takes it within [`CUT_OFF_GRACE`] — sends
//! `CONSUMER_CUT_OFF` after the rest of the frame it was sending; the consumer resubscribes from the position of
//! the last whole transaction it read.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use ferry_core::binlog::file_name;
use ferry_core::binlog::stream::StreamedTxn;
use ferry_core::gtid::{DomainId, Gtid, GtidPosition};
use ferry_core::node::Node;
use ferry_core::protocol::{ErrorCode, Response};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use crate::consumers::{ConsumerInfo, ConsumerRegistry, Registration};
use crate::dump::{open_stream, read_batch, seek_error, HEARTBEAT_MS_MAX, HEARTBEAT_MS_MIN};
use crate::frames::{read_frame, FrameLimits, Next};

/// Longest consumer name.
pub const NAME_BYTES_MAX: usize = 64;
/// Most domains one subscription may name.
pub const DOMAINS_MAX: usize = 1024;
/// How often a stalled write looks how much binlog went by meanwhile (it also looks whenever the binlog grows).
const STALL_CHECK: Duration = Duration::from_millis(100);
/// After a cut-off, how long the connection has to take the rest of its frame and the error saying why.
pub const CUT_OFF_GRACE: Duration = Duration::from_millis(200);
/// Largest frame a consumer may send during its stream (it should send none).
const CONSUMER_FRAME_BYTES_MAX: usize = 4096;

/// The consumers' bounds (`--consumers-max`, `--consumer-stall-bytes-max`).
#[derive(Debug, Clone, Copy)]
pub struct ConsumerLimits {
    /// Subscriptions streaming at once.
    pub consumers_max: usize,
    /// Bytes of binlog the master may write while a consumer's connection takes nothing, before it is cut off.
    pub stall_bytes_max: u64,
}

pub struct SubscribeRequest {
    pub request_id: u32,
    pub name: String,
    pub position: Option<String>,
    pub heartbeat_ms: u32,
    pub domains: Vec<DomainId>,
    /// The address the consumer connected from.
    pub peer: String,
    /// `--protocol-frame-timeout-s`: a frame a consumer begins must arrive whole within it.
    pub frame_timeout: Duration,
}

/// Why a name is refused, if it is.
fn check_name(name: &str) -> Result<(), String> {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    if name.is_empty() || name.len() > NAME_BYTES_MAX {
        return Err(format!("consumer name of {} bytes: it must have 1 to {NAME_BYTES_MAX}", name.len()));
    }
    match name.char_indices().find(|(_, c)| !ok(*c)) {
        Some((at, c)) => Err(format!("consumer name {name:?}: {c:?} at byte {at} is not one of [A-Za-z0-9_.-]")),
        None => Ok(()),
    }
}

/// `position` with only `domains` (all of it when `domains` is empty).
fn only(position: &GtidPosition, domains: &BTreeSet<DomainId>) -> GtidPosition {
    let mut out = GtidPosition::new();
    for g in position.iter().filter(|g| domains.is_empty() || domains.contains(&g.domain)) {
        out.set(g);
    }
    out
}

/// Where the binlog is searched from: `start` in the consumer's domains; every other domain at the master's
/// newest GTID, so that domains the consumer does not follow neither choose the file nor fail the search.
fn search_from(start: &GtidPosition, master: &GtidPosition, domains: &BTreeSet<DomainId>) -> GtidPosition {
    let mut out = start.clone();
    if !domains.is_empty() {
        for g in master.iter().filter(|g| !domains.contains(&g.domain)) {
            out.set(g);
        }
    }
    out
}

async fn refuse<W: AsyncWrite + Unpin>(writer: &mut W, id: u32, code: ErrorCode, msg: String) -> std::io::Result<()> {
    writer.write_all(&Response::error(code, msg).encode(id)).await?;
    writer.flush().await
}

/// Streams until the consumer goes away, an error, a cut-off, or shutdown. `writer` is the bare socket (nothing
/// buffered in front of it), so that what it has taken is known.
pub async fn serve<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    mut reader: R,
    writer: &mut W,
    node: &Arc<Node>,
    registry: &ConsumerRegistry,
    limits: ConsumerLimits,
    req: SubscribeRequest,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let id = req.request_id;
    if let Err(why) = check_name(&req.name) {
        return refuse(writer, id, ErrorCode::InvalidRequest, why).await;
    }
    if req.domains.len() > DOMAINS_MAX {
        let msg = format!("{} domains named: a subscription names at most {DOMAINS_MAX}", req.domains.len());
        return refuse(writer, id, ErrorCode::InvalidRequest, msg).await;
    }
    let domains: BTreeSet<DomainId> = req.domains.iter().copied().collect();
    let start = match &req.position {
        Some(text) => match text.parse::<GtidPosition>() {
            Ok(p) => only(&p, &domains),
            Err(e) => return refuse(writer, id, ErrorCode::BadGtid, e.to_string()).await,
        },
        None => match consumers_position(node).await {
            Ok(now) => only(&now, &domains),
            Err(e) => return refuse(writer, id, ErrorCode::BinlogUnreadable, e).await,
        },
    };
    let full = || {
        format!(
            "too many change consumers: this node streams to at most {} at once (--consumers-max)",
            limits.consumers_max
        )
    };
    if registry.len() >= limits.consumers_max {
        return refuse(writer, id, ErrorCode::TooManyConnections, full()).await;
    }
    let mut stream = match open_stream(node, search_from(&start, &node.binlog_position(), &domains)).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(consumer = %req.name, peer = %req.peer, "refused a change consumer: {e}");
            let refusal = seek_error(&e);
            writer.write_all(&refusal.encode(id)).await?;
            return writer.flush().await;
        }
    };
    let info = ConsumerInfo {
        name: req.name.clone(),
        address: req.peer.clone(),
        domains: domains.iter().copied().collect(),
        start_position: start.to_string(),
        position: start.to_string(),
        sent_file: String::new(),
        sent_offset: 0,
        connected_at_us: ferry_core::binlog::writer::now_us(),
        transactions_sent: 0,
        bytes_sent: 0,
        buffered_bytes: 0,
        buffered_bytes_peak: 0,
        stalled_bytes: 0,
    };
    let Some(registration) = registry.register(info, start.clone(), limits.consumers_max) else {
        return refuse(writer, id, ErrorCode::TooManyConnections, full()).await;
    };
    writer.write_all(&Response::Subscribed { position: start.to_string() }.encode(id)).await?;
    writer.flush().await?;
    tracing::info!(consumer = %req.name, peer = %req.peer, from = %start, "change consumer subscribed");

    let heartbeat = Duration::from_millis(u64::from(req.heartbeat_ms.clamp(HEARTBEAT_MS_MIN, HEARTBEAT_MS_MAX)));
    let buffer_bytes_max = node.config().limits.dump_buffer_bytes_max;
    let mut outlet = Outlet {
        writer,
        node: node.clone(),
        registration: &registration,
        stall_bytes_max: limits.stall_bytes_max,
        mark: node.counters().bytes_written,
    };
    // A consumer sends nothing during its stream: its connection closing is what this waits for.
    let frames = FrameLimits { bytes_max: CONSUMER_FRAME_BYTES_MAX, idle: None, frame: req.frame_timeout };
    let gone = async {
        let mut frame = Vec::new();
        while let Ok(Next::Frame) = read_frame(&mut reader, &mut frame, frames).await {}
    };
    let mut gone = std::pin::pin!(gone);
    let mut released = node.consumers_released();
    let ended = loop {
        if *stop.borrow() {
            break Ended::Refused(ErrorCode::ShuttingDown, "the master is shutting down".into());
        }
        if let Some(r) = &mut released {
            r.borrow_and_update();
        }
        let end = node.binlog_end();
        // With semi-sync: not past what its replicas have yet to confirm.
        let readable = node.consumers_end(end);
        let (back, batch) = read_batch(stream, readable, buffer_bytes_max).await;
        stream = back;
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(consumer = %req.name, "binlog read failed while streaming: {e}");
                break Ended::Refused(ErrorCode::BinlogUnreadable, e.to_string());
            }
        };
        if batch.is_empty() {
            // At the end of what it can read: a binlog started again (RESET MASTER) sends nothing more here.
            if stream.file_seq() > end.file_seq || !stream.reads_current_file() {
                break Ended::Refused(
                    ErrorCode::BinlogUnreadable,
                    format!(
                        "the binlog was started again (RESET MASTER) behind this stream, which read {}: subscribe again",
                        file_name(stream.file_seq())
                    ),
                );
            }
            tokio::select! {
                _ = node.wait_for_binlog_growth(end, heartbeat) => {}
                Some(()) = released_changed(&mut released) => continue,
                _ = stop.changed() => continue,
                _ = &mut gone => break Ended::Gone,
            }
            if node.binlog_end() > end {
                continue;
            }
            let beat = Response::Heartbeat {
                binlog_pos: node.position().to_string(),
                file: file_name(end.file_seq),
                offset: end.offset,
            };
            match outlet.send(Vec::from([(beat.encode(id), None)])).await {
                Ok(()) => continue,
                Err(e) => break e,
            }
        }
        registration.buffered(batch.iter().map(|t| t.raw.len() as u64).sum());
        let mut frames = Vec::with_capacity(batch.len());
        for txn in batch {
            let bytes = txn.raw.len() as u64;
            if !domains.is_empty() && !domains.contains(&txn.header.gtid.domain) {
                registration.passed_over(bytes);
                continue;
            }
            let sent = Sent::of(&txn);
            let frame =
                Response::ReplTxn { file: sent.file.clone(), end_offset: sent.offset, events: txn.raw, ack: false };
            frames.push((frame.encode(id), Some(sent)));
        }
        if let Err(e) = outlet.send(frames).await {
            break e;
        }
    };
    match ended {
        Ended::Gone => {
            tracing::info!(consumer = %req.name, peer = %req.peer, "change consumer went away");
            Ok(())
        }
        Ended::Io(e) => Err(e),
        Ended::Refused(code, msg) => refuse(&mut *outlet.writer, id, code, msg).await,
        Ended::CutOff { stalled_bytes, rest } => {
            let reason = format!(
                "cut off: the consumer's connection took none of its stream while the master wrote {stalled_bytes} \
                 bytes of binlog (--consumer-stall-bytes-max {}); subscribe again from the last transaction read",
                limits.stall_bytes_max
            );
            tracing::warn!(consumer = %req.name, peer = %req.peer, position = %registration.position(), "{reason}");
            registration.cut_off(reason.clone());
            let mut last = rest;
            last.extend_from_slice(&Response::error(ErrorCode::ConsumerCutOff, reason).encode(id));
            let _ = tokio::time::timeout(CUT_OFF_GRACE, async {
                outlet.writer.write_all(&last).await?;
                outlet.writer.flush().await
            })
            .await;
            Ok(())
        }
    }
}

/// Waits until a group held back from consumers is released; `None` at once without semi-sync (never
/// released: the `select!` branch is then disabled).
async fn released_changed(released: &mut Option<tokio::sync::watch::Receiver<u64>>) -> Option<()> {
    released.as_mut()?.changed().await.ok()
}

/// [`Node::consumers_position`] off the async threads (it may read a binlog file).
async fn consumers_position(node: &Arc<Node>) -> Result<GtidPosition, String> {
    let node = node.clone();
    match tokio::task::spawn_blocking(move || node.consumers_position()).await {
        Ok(Ok(position)) => Ok(position),
        Ok(Err(e)) => Err(format!("where the stream starts: {e}")),
        Err(e) => Err(format!("where the stream starts: {e}")),
    }
}

/// How a stream ended.
enum Ended {
    /// The consumer closed its connection.
    Gone,
    Io(std::io::Error),
    /// The stream ends with this error frame.
    Refused(ErrorCode, String),
    /// The connection took nothing while the master wrote `stalled_bytes`; `rest` is the unsent tail of the
    /// frame it was taking (sent before the error, so the consumer's framing holds).
    CutOff {
        stalled_bytes: u64,
        rest: Vec<u8>,
    },
}

/// What a transaction's frame reports once the connection has taken all of it.
struct Sent {
    gtid: Gtid,
    commit_ts_us: u64,
    file: String,
    offset: u64,
    bytes: u64,
}

impl Sent {
    fn of(txn: &StreamedTxn) -> Self {
        Sent {
            gtid: txn.header.gtid,
            commit_ts_us: txn.header.commit_ts_us,
            file: file_name(txn.end.file_seq),
            offset: txn.end.offset,
            bytes: txn.raw.len() as u64,
        }
    }
}

/// The consumer's connection, with what is known of its progress.
struct Outlet<'a, W> {
    writer: &'a mut W,
    node: Arc<Node>,
    registration: &'a Registration<'a>,
    stall_bytes_max: u64,
    /// The node's binlog bytes written when the connection last took something.
    mark: u64,
}

impl<W: AsyncWrite + Unpin> Outlet<'_, W> {
    /// Writes `frames` in one go as the connection takes them, reporting each transaction once all of its frame
    /// is taken; ends in a cut-off when the binlog grows by the stall bound while the connection takes nothing.
    async fn send(&mut self, frames: Vec<(Vec<u8>, Option<Sent>)>) -> Result<(), Ended> {
        let total: usize = frames.iter().map(|(f, _)| f.len()).sum();
        let mut out = Vec::with_capacity(total);
        let mut ends = Vec::with_capacity(frames.len());
        for (frame, sent) in frames {
            out.extend_from_slice(&frame);
            ends.push((out.len(), sent));
        }
        let mut done = 0usize;
        let mut reported = 0usize;
        while done < out.len() {
            let node = self.node.clone();
            let seen = node.binlog_end();
            let taken = tokio::select! {
                taken = self.writer.write(&out[done..]) => taken,
                _ = node.wait_for_binlog_growth(seen, STALL_CHECK) => {
                    let stalled_bytes = node.counters().bytes_written.saturating_sub(self.mark);
                    self.registration.stalled(stalled_bytes);
                    if stalled_bytes >= self.stall_bytes_max {
                        let frame_start = ends[..reported].last().map_or(0, |(end, _)| *end);
                        let frame_end = ends.get(reported).map_or(out.len(), |(end, _)| *end);
                        // A frame begun is finished before the error; a frame not begun is not sent.
                        let rest = if done > frame_start { out[done..frame_end].to_vec() } else { Vec::new() };
                        return Err(Ended::CutOff { stalled_bytes, rest });
                    }
                    continue;
                }
            };
            match taken {
                Ok(0) => return Err(Ended::Io(std::io::ErrorKind::WriteZero.into())),
                Ok(n) => done += n,
                Err(e) => return Err(Ended::Io(e)),
            }
            self.mark = self.node.counters().bytes_written;
            self.registration.stalled(0);
            while reported < ends.len() && ends[reported].0 <= done {
                if let Some(s) = ends[reported].1.take() {
                    self.registration.sent(s.gtid, s.commit_ts_us, &s.file, s.offset, s.bytes);
                }
                reported += 1;
            }
        }
        self.writer.flush().await.map_err(Ended::Io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_to_64_bytes_of_a_small_alphabet_and_a_bad_one_is_pointed_at() {
        assert!(check_name("cache-invalidator_2.eu").is_ok());
        assert!(check_name(&"a".repeat(64)).is_ok());
        assert!(check_name(&"a".repeat(65)).unwrap_err().contains("65 bytes"));
        assert!(check_name("").unwrap_err().contains("0 bytes"));
        assert!(check_name("ab cd").unwrap_err().contains("' ' at byte 2"));
    }

    #[test]
    fn a_filtered_subscription_searches_only_by_its_own_domains() {
        let master: GtidPosition = "0-1-90,1-1-40,2-2-7".parse().unwrap();
        let domains = BTreeSet::from([1]);
        let start = only(&"0-1-3,1-1-5".parse().unwrap(), &domains);
        assert_eq!(start.to_string(), "1-1-5");
        assert_eq!(search_from(&start, &master, &domains).to_string(), "0-1-90,1-1-5,2-2-7");
        let all = BTreeSet::new();
        assert_eq!(search_from(&"1-1-5".parse().unwrap(), &master, &all).to_string(), "1-1-5", "no filter: as given");
    }
}

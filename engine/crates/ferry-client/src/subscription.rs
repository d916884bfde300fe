//! A change subscription to one node: authenticates with the consumer token, sends `Subscribe` from a GTID
//! position, and yields each committed transaction — its GTID, commit time and row images — with the position
//! to store beside whatever the application derives from it. Resuming from a stored position continues just
//! after it: nothing is missed, nothing repeated.
//!
//! The node's frames are untrusted input: every transaction is checked (each event's checksum, a GTID event
//! first, row events, a commit event last whose count matches the rows, nothing after it) before it is handed
//! out ([`decode_transaction`]).

use std::time::Duration;

use ferry_core::binlog::event::{decode_event, Event};
use ferry_core::binlog::reader::ReadEvent;
use ferry_core::gtid::{DomainId, Gtid, GtidPosition};
use ferry_core::protocol::{Request, Response};
use ferry_core::row::RowChange;

use crate::{Client, ClientError, ErrorCode};

/// Heartbeat interval asked for unless the options say otherwise.
pub const HEARTBEAT_DEFAULT: Duration = Duration::from_millis(500);
/// A node silent for this many heartbeat intervals (plus a second) is taken for gone.
const HEARTBEATS_MISSED_MAX: u32 = 3;

/// How to subscribe.
#[derive(Debug, Clone)]
pub struct SubscribeOptions {
    /// The name the node lists the consumer by (1–64 bytes of `[A-Za-z0-9_.-]`).
    pub name: String,
    /// The node's consumer token (`--consumer-token-file`).
    pub token: String,
    /// Start just after this position (the one stored with the application's data); `None`: after the node's
    /// binlog position at the time of subscribing (only what is committed from then on).
    pub start: Option<GtidPosition>,
    /// Only these domains' transactions (all when empty).
    pub domains: Vec<DomainId>,
    /// How often the node sends a heartbeat while it has nothing to send.
    pub heartbeat: Duration,
}

impl SubscribeOptions {
    pub fn new(name: &str, token: &str) -> Self {
        SubscribeOptions {
            name: name.to_string(),
            token: token.to_string(),
            start: None,
            domains: Vec::new(),
            heartbeat: HEARTBEAT_DEFAULT,
        }
    }
}

/// One committed transaction as a consumer receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub gtid: Gtid,
    /// The master's commit group.
    pub commit_id: u64,
    /// Commit time on the server that first committed it, microseconds since the Unix epoch.
    pub commit_ts_us: u64,
    /// The GTID event's flags (`ferry_core::binlog::event::flags`).
    pub flags: u8,
    /// Its row images, in order.
    pub changes: Vec<RowChange>,
    /// Its events as written in the sending node's binlog, each with its file and offset (what `ferry-binlog`
    /// prints).
    pub events: Vec<ReadEvent>,
    /// The position to store with what is derived from this transaction: subscribing from it continues just
    /// after this transaction.
    pub position: GtidPosition,
}

/// What the node sent next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    Change(Change),
    /// The node had nothing to send for a heartbeat interval; its binlog position then.
    Heartbeat {
        master_position: GtidPosition,
    },
}

/// Checks one transaction's bytes as a node sent them and decodes it. `end_offset` is where it ends in the
/// node's binlog file `file`; the events' offsets are counted back from it.
pub fn decode_transaction(file: &str, end_offset: u64, bytes: &[u8]) -> Result<Change, String> {
    let total = bytes.len() as u64;
    let Some(mut offset) = end_offset.checked_sub(total) else {
        return Err(format!("a transaction of {total} bytes cannot end at offset {end_offset}"));
    };
    let mut rest = bytes;
    let mut events = Vec::new();
    let mut changes = Vec::new();
    let mut header = None;
    while !rest.is_empty() {
        let (event, len) = decode_event(rest).map_err(|e| format!("event at offset {offset} of {file}: {e}"))?;
        match (&event, header.is_some()) {
            (Event::Gtid(g), false) => header = Some(*g),
            (Event::Rows { changes: rows }, true) => changes.extend(rows.iter().cloned()),
            (Event::Commit { changes: n }, true) if *n as usize != changes.len() => {
                return Err(format!(
                    "the commit event at offset {offset} counts {n} row changes; {} came",
                    changes.len()
                ))
            }
            (Event::Commit { .. }, true) if rest.len() > len => {
                return Err(format!("{} bytes follow the commit event at offset {offset}", rest.len() - len));
            }
            (Event::Commit { .. }, true) => {}
            (other, _) => {
                return Err(format!("unexpected {} event at offset {offset} of {file}", other.type_name()));
            }
        }
        events.push(ReadEvent { file: file.to_string(), offset, len: len as u64, event });
        offset += len as u64;
        rest = &rest[len..];
    }
    let Some(header) = header else { return Err("an empty transaction".into()) };
    if !matches!(events.last().map(|e| &e.event), Some(Event::Commit { .. })) {
        return Err(format!("transaction {} ends without a commit event", header.gtid));
    }
    Ok(Change {
        gtid: header.gtid,
        commit_id: header.commit_id,
        commit_ts_us: header.commit_ts_us,
        flags: header.flags,
        changes,
        events,
        position: GtidPosition::new(),
    })
}

/// A subscription to one node.
pub struct Subscription {
    client: Client,
    request_id: u32,
    /// Just after the last transaction handed out (where a new subscription resumes).
    position: GtidPosition,
    /// Longest silence before the node is taken for gone.
    silence: Duration,
    addr: String,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").field("addr", &self.addr).field("position", &self.position.to_string()).finish()
    }
}

impl Subscription {
    /// Connects to `addr`, authenticates, subscribes; the node answers with where the stream starts.
    pub async fn open(addr: &str, options: &SubscribeOptions) -> Result<Self, ClientError> {
        let mut client = Client::connect(addr).await?;
        client.auth(&options.token).await?;
        let request = Request::Subscribe {
            name: options.name.clone(),
            position: options.start.as_ref().map(ToString::to_string),
            heartbeat_ms: options.heartbeat.as_millis().clamp(1, u128::from(u32::MAX)) as u32,
            domains: options.domains.clone(),
        };
        let position = match client.call(&request).await? {
            Response::Subscribed { position } => {
                position.parse().map_err(|e| ClientError::Protocol(format!("the node started at {position:?}: {e}")))?
            }
            other => return Err(ClientError::Protocol(format!("unexpected answer to Subscribe: {other:?}"))),
        };
        let request_id = client.next_request_id.wrapping_sub(1);
        let silence = options.heartbeat * HEARTBEATS_MISSED_MAX + Duration::from_secs(1);
        Ok(Subscription { client, request_id, position, silence, addr: addr.to_string() })
    }

    /// The position after the last transaction handed out (at first: where the node started the stream).
    pub fn position(&self) -> &GtidPosition {
        &self.position
    }

    /// The node subscribed to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The next committed transaction (heartbeats are passed over).
    pub async fn next(&mut self) -> Result<Change, ClientError> {
        loop {
            if let Update::Change(change) = self.next_update().await? {
                return Ok(change);
            }
        }
    }

    /// The next transaction or heartbeat. A stream the node ends (an error frame, a closed connection) or a
    /// node silent past three heartbeats is an error; the subscription is then over.
    pub async fn next_update(&mut self) -> Result<Update, ClientError> {
        let read = tokio::time::timeout(self.silence, self.client.read_response()).await;
        let (id, response) = match read {
            Ok(Ok(frame)) => frame,
            Ok(Err(ClientError::Io(e))) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(ClientError::Ended(format!(
                    "{} closed the subscription without a reason (stopped, killed, or it cut this consumer off \
                     for not reading: its GET /v1/consumers lists those under cut_off)",
                    self.addr
                )));
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(ClientError::Ended(format!("no heartbeat from {} for {:?}", self.addr, self.silence)));
            }
        };
        if let Response::Error { code, message } = response {
            return Err(ClientError::Server { code: ErrorCode::from_u16(code), raw_code: code, message });
        }
        if id != self.request_id {
            return Err(ClientError::Protocol(format!("a frame of request {id} in the stream of {}", self.request_id)));
        }
        match response {
            Response::ReplTxn { file, end_offset, events, .. } => {
                let mut change = decode_transaction(&file, end_offset, &events)
                    .map_err(|why| ClientError::Protocol(format!("a bad transaction from {}: {why}", self.addr)))?;
                self.position.set(change.gtid);
                change.position = self.position.clone();
                Ok(Update::Change(change))
            }
            Response::Heartbeat { binlog_pos, .. } => {
                let master_position = binlog_pos
                    .parse()
                    .map_err(|e| ClientError::Protocol(format!("a heartbeat's position {binlog_pos:?}: {e}")))?;
                Ok(Update::Heartbeat { master_position })
            }
            other => Err(ClientError::Protocol(format!("unexpected frame in a subscription: {other:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_core::binlog::event::{encode_event, GtidEvent};
    use ferry_core::row::{Row, Value};
    use proptest::prelude::*;

    fn txn(seq: u64, rows: usize, commit_count: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let gtid = GtidEvent { gtid: Gtid::new(1, 2, seq), commit_id: 7, flags: 0, commit_ts_us: 1_000 };
        encode_event(&Event::Gtid(gtid), &mut out);
        let changes: Vec<RowChange> = (0..rows)
            .map(|i| RowChange {
                table: "t".into(),
                key: format!("k{i}"),
                before: None,
                after: Some(Row::from([("n".to_string(), Value::Int(i as i64))])),
            })
            .collect();
        encode_event(&Event::Rows { changes }, &mut out);
        encode_event(&Event::Commit { changes: commit_count }, &mut out);
        out
    }

    #[test]
    fn a_transaction_decodes_with_its_images_and_the_offsets_of_its_events() {
        let bytes = txn(5, 2, 2);
        let change = decode_transaction("ferry-bin.000003", 1000 + bytes.len() as u64, &bytes).unwrap();
        assert_eq!(change.gtid, Gtid::new(1, 2, 5));
        assert_eq!((change.commit_id, change.commit_ts_us), (7, 1_000));
        assert_eq!(change.changes.len(), 2);
        assert_eq!(change.events.len(), 3);
        assert_eq!(change.events[0].offset, 1000);
        assert_eq!(change.events[0].file, "ferry-bin.000003");
        let last = change.events.last().unwrap();
        assert_eq!(last.offset + last.len, 1000 + bytes.len() as u64, "the events tile the transaction");
    }

    #[test]
    fn a_malformed_transaction_is_refused_saying_why() {
        let e = |bytes: &[u8], end: u64| decode_transaction("f", end, bytes).unwrap_err();
        let good = txn(5, 2, 2);
        assert!(e(&txn(5, 2, 3), 10_000).contains("counts 3 row changes; 2 came"));
        assert!(e(&good, 3).contains("cannot end at offset 3"));
        assert!(e(&good[..good.len() - 1], 10_000).contains("event at offset"), "a torn commit");
        let mut twice = good.clone();
        twice.extend_from_slice(&good);
        assert!(e(&twice, 10_000).contains("bytes follow the commit event"), "two transactions in one");
        let mut commit_only = Vec::new();
        encode_event(&Event::Commit { changes: 0 }, &mut commit_only);
        assert!(e(&commit_only, 10_000).contains("unexpected commit event"), "no GTID first");
        assert!(e(&[], 0).contains("empty"));
        let mut flipped = good.clone();
        flipped[good.len() - 2] ^= 0xff;
        assert!(e(&flipped, 10_000).contains("event at offset"), "a bad checksum");
    }

    proptest! {
        /// Bytes from the network never make the decoder panic, and whatever it accepts tiles the input exactly.
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256), end in 0u64..4096) {
            if let Ok(change) = decode_transaction("f", end, &bytes) {
                let covered: u64 = change.events.iter().map(|e| e.len).sum();
                prop_assert_eq!(covered, bytes.len() as u64);
            }
        }

        /// A real transaction with a byte flipped anywhere is refused (every event carries its checksum).
        #[test]
        fn a_flipped_byte_is_always_refused(rows in 0usize..4, at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut bytes = txn(9, rows, rows as u32);
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert!(decode_transaction("f", 100_000, &bytes).is_err());
        }
    }
}

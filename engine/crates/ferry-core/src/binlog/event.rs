//! Binlog events and their checksummed framing.
//!
//! Every event on disk is `body_len: u32 | type: u8 | body | crc32c: u32`, the CRC covering header and body.
//! [`decode_event`] checks the length against [`MAX_EVENT_BYTES`] before reading, then the checksum, then the
//! body, so corrupt or hostile bytes give an [`EventError`] and never a panic or a huge allocation.

use serde::Serialize;

use crate::codec::{DecodeError, Decoder, Encoder};
use crate::gtid::{Gtid, ServerId};
use crate::row::{decode_change, encode_change, encoded_change_len, RowChange};

/// Bytes before the body: length (4) and type (1).
pub const EVENT_HEADER_BYTES: usize = 5;
/// Bytes after the body: the CRC32C.
pub const EVENT_TRAILER_BYTES: usize = 4;
/// Largest body an event may have; a length above it is corruption, not a reason to allocate.
pub const MAX_EVENT_BYTES: usize = 64 << 20;
/// Version of the event format written in each file's format-description event.
pub const BINLOG_FORMAT_VERSION: u16 = 1;

/// GTID event flags, recorded by the master for the replica's parallel scheduler.
pub mod flags {
    /// The transaction changed transactional tables (always true for row changes here).
    pub const TRANSACTIONAL: u8 = 0x01;
    /// The transaction had to wait for a row lock held by another transaction before committing.
    pub const WAITED: u8 = 0x02;
    /// A DDL-like standalone change that must not run in parallel with anything.
    pub const DDL: u8 = 0x04;
    /// Set by the node that logged it when the transaction came in through replication (not a client): crash
    /// recovery rebuilds gtid_slave_pos from these.
    pub const REPLICATED: u8 = 0x08;
    /// The row events carry before images for every change (an absent one means the row did not exist), so a
    /// replica can check each row it changes.
    pub const BEFORE_IMAGES: u8 = 0x10;
}

/// Opens every binlog file: who wrote it and in what format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FormatDescription {
    pub binlog_version: u16,
    pub server_id: ServerId,
    pub created_at_us: u64,
    pub server_version: String,
}

/// Starts a transaction: its GTID and what the replica's scheduler needs to know about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GtidEvent {
    pub gtid: Gtid,
    /// Id of the master's commit group; transactions sharing it committed together and may apply in parallel.
    pub commit_id: u64,
    /// Bitset of [`flags`].
    pub flags: u8,
    /// Commit time on the originating master, microseconds since the Unix epoch (lag in seconds uses it).
    pub commit_ts_us: u64,
}

/// Marks the point up to which the store is durable: recovery replays the binlog from there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checkpoint {
    /// Named apart from the event's own file and offset when serialized flat beside them.
    #[serde(rename = "checkpoint_file")]
    pub file: String,
    #[serde(rename = "checkpoint_offset")]
    pub offset: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    FormatDescription(FormatDescription),
    /// The full binlog state (last GTID per domain and server) when the file was opened.
    GtidList {
        gtids: Vec<Gtid>,
    },
    Gtid(GtidEvent),
    /// Row images of one transaction.
    Rows {
        changes: Vec<RowChange>,
    },
    /// Ends a transaction; `changes` repeats the row count so a reader can check it got them all.
    Commit {
        changes: u32,
    },
    Checkpoint(Checkpoint),
    /// Last event of a file that was closed by rotation.
    Rotate {
        next_file: String,
    },
}

impl Event {
    pub fn type_code(&self) -> u8 {
        match self {
            Event::FormatDescription(_) => 1,
            Event::GtidList { .. } => 2,
            Event::Gtid(_) => 3,
            Event::Rows { .. } => ROWS_TYPE,
            Event::Commit { .. } => 5,
            Event::Checkpoint(_) => 6,
            Event::Rotate { .. } => 7,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Event::FormatDescription(_) => "format_description",
            Event::GtidList { .. } => "gtid_list",
            Event::Gtid(_) => "gtid",
            Event::Rows { .. } => "rows",
            Event::Commit { .. } => "commit",
            Event::Checkpoint(_) => "checkpoint",
            Event::Rotate { .. } => "rotate",
        }
    }

    fn encode_body(&self, enc: &mut Encoder) {
        match self {
            Event::FormatDescription(fd) => {
                enc.u16(fd.binlog_version).u32(fd.server_id).u64(fd.created_at_us).str(&fd.server_version);
            }
            Event::GtidList { gtids } => {
                enc.u32(gtids.len() as u32);
                for g in gtids {
                    enc.gtid(*g);
                }
            }
            Event::Gtid(g) => {
                enc.gtid(g.gtid).u64(g.commit_id).u8(g.flags).u64(g.commit_ts_us);
            }
            Event::Rows { changes } => encode_rows_body(enc, changes),
            Event::Commit { changes } => {
                enc.u32(*changes);
            }
            Event::Checkpoint(c) => {
                enc.str(&c.file).u64(c.offset);
            }
            Event::Rotate { next_file } => {
                enc.str(next_file);
            }
        }
    }

    fn decode_body(type_code: u8, body: &[u8]) -> Result<Event, EventError> {
        let mut dec = Decoder::new(body);
        let event = match type_code {
            1 => Event::FormatDescription(FormatDescription {
                binlog_version: dec.u16("binlog version")?,
                server_id: dec.u32("server_id")?,
                created_at_us: dec.u64("creation time")?,
                server_version: dec.str("server version")?.to_string(),
            }),
            2 => {
                let n = dec.count("GTID list length", 16)?;
                let mut gtids = Vec::with_capacity(n);
                for _ in 0..n {
                    gtids.push(dec.gtid("GTID list entry")?);
                }
                Event::GtidList { gtids }
            }
            3 => Event::Gtid(GtidEvent {
                gtid: dec.gtid("GTID")?,
                commit_id: dec.u64("commit id")?,
                flags: dec.u8("flags")?,
                commit_ts_us: dec.u64("commit timestamp")?,
            }),
            4 => {
                // A change is at least two empty strings and two absent images: 10 bytes.
                let n = dec.count("row change count", 10)?;
                let mut changes = Vec::with_capacity(n);
                for _ in 0..n {
                    changes.push(decode_change(&mut dec)?);
                }
                Event::Rows { changes }
            }
            5 => Event::Commit { changes: dec.u32("row change count")? },
            6 => Event::Checkpoint(Checkpoint { file: dec.str("file name")?.to_string(), offset: dec.u64("offset")? }),
            7 => Event::Rotate { next_file: dec.str("next file name")?.to_string() },
            other => return Err(EventError::UnknownType(other)),
        };
        dec.finish(event.type_name())?;
        Ok(event)
    }
}

/// Why bytes are not a valid event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// Fewer bytes than the header or the declared length need: a torn write at the end of a file.
    #[error("truncated event: {needed} bytes needed, {available} available")]
    Truncated { needed: usize, available: usize },
    #[error("event length {0} exceeds the {MAX_EVENT_BYTES}-byte limit")]
    TooLarge(usize),
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    BadChecksum { stored: u32, computed: u32 },
    #[error("unknown event type {0}")]
    UnknownType(u8),
    #[error("malformed event body: {0}")]
    Malformed(#[from] DecodeError),
}

fn encode_rows_body(enc: &mut Encoder, changes: &[RowChange]) {
    enc.u32(changes.len() as u32);
    for c in changes {
        encode_change(enc, c);
    }
}

/// Body length of the `Rows` event [`encode_rows_event`] would write for `changes`, computed without encoding
/// (what the write path checks against the largest-event limit before a transaction joins the commit queue).
pub fn rows_event_body_len(changes: &[RowChange]) -> usize {
    4 + changes.iter().map(encoded_change_len).sum::<usize>()
}

/// Appends the framed, checksummed event to `out`; returns its length on disk.
pub fn encode_event(event: &Event, out: &mut Vec<u8>) -> usize {
    frame_event(event.type_code(), out, |enc| event.encode_body(enc))
}

/// Appends a `Rows` event for borrowed changes (the same bytes as `encode_event(&Event::Rows { .. })`, without
/// copying the rows first: the commit path's form).
pub fn encode_rows_event(changes: &[RowChange], out: &mut Vec<u8>) -> usize {
    frame_event(ROWS_TYPE, out, |enc| encode_rows_body(enc, changes))
}

const ROWS_TYPE: u8 = 4;

fn frame_event(type_code: u8, out: &mut Vec<u8>, body: impl FnOnce(&mut Encoder)) -> usize {
    let start = out.len();
    let mut enc = Encoder { buf: std::mem::take(out) };
    enc.u32(0).u8(type_code);
    body(&mut enc);
    let body_len = enc.buf.len() - start - EVENT_HEADER_BYTES;
    assert!(body_len <= MAX_EVENT_BYTES, "event body of {body_len} bytes exceeds MAX_EVENT_BYTES");
    enc.buf[start..start + 4].copy_from_slice(&(body_len as u32).to_le_bytes());
    let crc = crc32c::crc32c(&enc.buf[start..]);
    enc.u32(crc);
    *out = enc.buf;
    out.len() - start
}

/// Length on disk of the event starting at `bytes`, read from its header (checked against the limit).
pub fn framed_len(bytes: &[u8]) -> Result<usize, EventError> {
    if bytes.len() < EVENT_HEADER_BYTES {
        return Err(EventError::Truncated { needed: EVENT_HEADER_BYTES, available: bytes.len() });
    }
    let body_len = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    if body_len > MAX_EVENT_BYTES {
        return Err(EventError::TooLarge(body_len));
    }
    Ok(EVENT_HEADER_BYTES + body_len + EVENT_TRAILER_BYTES)
}

/// Decodes the event at the start of `bytes`, verifying its checksum; returns it and its length on disk.
pub fn decode_event(bytes: &[u8]) -> Result<(Event, usize), EventError> {
    let total = framed_len(bytes)?;
    if bytes.len() < total {
        return Err(EventError::Truncated { needed: total, available: bytes.len() });
    }
    let crc_at = total - EVENT_TRAILER_BYTES;
    let stored = u32::from_le_bytes(bytes[crc_at..total].try_into().expect("4 bytes"));
    let computed = crc32c::crc32c(&bytes[..crc_at]);
    if stored != computed {
        return Err(EventError::BadChecksum { stored, computed });
    }
    let event = Event::decode_body(bytes[4], &bytes[EVENT_HEADER_BYTES..crc_at])?;
    Ok((event, total))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::row::{Row, Value};
    use proptest::prelude::*;

    pub fn sample_events() -> Vec<Event> {
        let row: Row = [("n".to_string(), Value::Int(3)), ("s".to_string(), Value::Text("x".into()))].into();
        vec![
            Event::FormatDescription(FormatDescription {
                binlog_version: BINLOG_FORMAT_VERSION,
                server_id: 1,
                created_at_us: 1_700_000_000_000_000,
                server_version: "ferryd 0.1.0".into(),
            }),
            Event::GtidList { gtids: vec![Gtid::new(0, 1, 5), Gtid::new(1, 2, 9)] },
            Event::Gtid(GtidEvent {
                gtid: Gtid::new(0, 1, 6),
                commit_id: 42,
                flags: flags::TRANSACTIONAL | flags::WAITED,
                commit_ts_us: 1_700_000_000_000_001,
            }),
            Event::Rows {
                changes: vec![
                    RowChange { table: "t".into(), key: "k1".into(), before: None, after: Some(row.clone()) },
                    RowChange { table: "t".into(), key: "k2".into(), before: Some(row), after: None },
                ],
            },
            Event::Commit { changes: 2 },
            Event::Checkpoint(Checkpoint { file: "ferry-bin.000001".into(), offset: 1234 }),
            Event::Rotate { next_file: "ferry-bin.000002".into() },
        ]
    }

    proptest! {
        /// The size the write path checks before a transaction is queued is exactly the size it writes.
        #[test]
        fn rows_event_body_len_is_the_encoded_body_length(changes in proptest::collection::vec(crate::row::tests::arb_change(), 0..8)) {
            let mut buf = Vec::new();
            let framed = encode_rows_event(&changes, &mut buf);
            prop_assert_eq!(framed, EVENT_HEADER_BYTES + rows_event_body_len(&changes) + EVENT_TRAILER_BYTES);
        }
    }

    #[test]
    fn every_event_kind_round_trips() {
        for event in sample_events() {
            let mut buf = Vec::new();
            let len = encode_event(&event, &mut buf);
            assert_eq!(len, buf.len());
            assert_eq!(decode_event(&buf).unwrap(), (event, len));
        }
    }

    #[test]
    fn a_rows_event_from_borrowed_changes_is_byte_for_byte_the_same() {
        let Event::Rows { changes } = &sample_events()[3] else { panic!("sample 3 is a rows event") };
        let (mut owned, mut borrowed) = (Vec::new(), Vec::new());
        encode_event(&Event::Rows { changes: changes.clone() }, &mut owned);
        encode_rows_event(changes, &mut borrowed);
        assert_eq!(owned, borrowed);
    }

    #[test]
    fn any_flipped_bit_is_caught() {
        let mut buf = Vec::new();
        encode_event(&sample_events()[3], &mut buf);
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut bad = buf.clone();
                bad[i] ^= 1 << bit;
                assert!(decode_event(&bad).is_err(), "flip of bit {bit} in byte {i} went unnoticed");
            }
        }
    }

    #[test]
    fn a_torn_event_reports_truncation() {
        let mut buf = Vec::new();
        encode_event(&sample_events()[2], &mut buf);
        for cut in 0..buf.len() {
            assert!(matches!(decode_event(&buf[..cut]), Err(EventError::Truncated { .. })), "cut at {cut}");
        }
    }

    #[test]
    fn a_huge_length_is_refused_without_reading() {
        let mut buf = vec![0u8; 16];
        buf[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(decode_event(&buf), Err(EventError::TooLarge(_))));
    }

    #[test]
    fn an_unknown_type_with_a_valid_checksum_is_named() {
        let mut buf = vec![0, 0, 0, 0, 99];
        let crc = crc32c::crc32c(&buf);
        buf.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(decode_event(&buf), Err(EventError::UnknownType(99)));
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_event(&bytes);
        }

        #[test]
        fn gtid_events_round_trip(d: u32, s: u32, n: u64, commit_id: u64, flags: u8, ts: u64) {
            let event = Event::Gtid(GtidEvent { gtid: Gtid::new(d, s, n), commit_id, flags, commit_ts_us: ts });
            let mut buf = Vec::new();
            encode_event(&event, &mut buf);
            prop_assert_eq!(decode_event(&buf).unwrap().0, event);
        }
    }
}

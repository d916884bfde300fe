//! Decode-then-re-encode checks: every input a decoder accepts must encode back to exactly the same bytes
//! (or, for text, format to a text that parses back to the same value).
//!
//! Each check returns whether the decoder accepted the input and panics when the round trip fails, which is
//! what libFuzzer reports as a crash. Errors are fine: decoders must reject bad input, just never panic.
//! This file is compiled twice, as part of `ferry-fuzz` and inside ferry-core's corpus test, so it uses
//! nothing but `std`, `ferry_core` and `crc32c` (which ferry-core depends on).

use ferry_core::binlog::event::{decode_event, encode_event};
use ferry_core::clone_chunk;
use ferry_core::protocol::{Request, LENGTH_BYTES};
use ferry_core::GtidPosition;

/// A binlog event: decoding consumes a prefix of `bytes`; re-encoding the event must give back that prefix.
pub fn event_round_trips(bytes: &[u8]) -> bool {
    let Ok((event, consumed)) = decode_event(bytes) else { return false };
    let mut encoded = Vec::new();
    let written = encode_event(&event, &mut encoded);
    assert_eq!(written, encoded.len());
    assert_eq!(encoded, bytes[..consumed], "re-encoding {event:?} changed its bytes");
    true
}

/// A binlog event's type byte and body, framed with the right length and checksum, then as
/// [`event_round_trips`]: mutations reach the body decoder instead of nearly all failing the checksum.
pub fn sealed_event_round_trips(type_and_body: &[u8]) -> bool {
    let Some((&type_code, body)) = type_and_body.split_first() else { return false };
    let mut framed = Vec::with_capacity(type_and_body.len() + 8);
    framed.extend_from_slice(&(body.len() as u32).to_le_bytes());
    framed.push(type_code);
    framed.extend_from_slice(body);
    let crc = crc32c::crc32c(&framed);
    framed.extend_from_slice(&crc.to_le_bytes());
    let accepted = event_round_trips(&framed);
    // With a correct frame, only the body can be refused.
    assert!(accepted || body_refused(&framed), "a sealed frame was refused for its framing");
    accepted
}

fn body_refused(framed: &[u8]) -> bool {
    use ferry_core::binlog::event::EventError;
    matches!(decode_event(framed), Err(EventError::Malformed(_) | EventError::UnknownType(_) | EventError::TooLarge(_)))
}

/// A request frame without its length prefix: re-encoding with its request id must give back the whole input.
pub fn request_round_trips(frame: &[u8]) -> bool {
    let Ok((header, request)) = Request::decode(frame) else { return false };
    let encoded = request.encode(header.request_id);
    let (prefix, rest) = encoded.split_at(LENGTH_BYTES);
    assert_eq!(prefix, (frame.len() as u32).to_le_bytes(), "length prefix of re-encoded {request:?}");
    assert_eq!(rest, frame, "re-encoding {request:?} changed its bytes");
    true
}

/// GTID position text: what parses must format to a text that parses to the same position and formats the same.
pub fn position_round_trips(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else { return false };
    let Ok(position) = text.parse::<GtidPosition>() else { return false };
    let formatted = position.to_string();
    let again: GtidPosition = formatted
        .parse()
        .unwrap_or_else(|e| panic!("{text:?} parsed, but its formatted text {formatted:?} does not: {e}"));
    assert_eq!(again, position, "{text:?} formatted as {formatted:?}, which parses to another position");
    assert_eq!(again.to_string(), formatted, "formatting is not stable for {text:?}");
    true
}

/// A clone chunk's rows, sealed with their correct CRC32C: what decodes must re-encode to the same bytes and
/// checksum, and a refusal is never for the checksum.
pub fn clone_chunk_round_trips(data: &[u8]) -> bool {
    let crc = crc32c::crc32c(data);
    match clone_chunk::decode("t", data, crc) {
        Ok(rows) => {
            assert_eq!(clone_chunk::encode(&rows), (data.to_vec(), crc), "re-encoding {rows:?} changed its bytes");
            true
        }
        Err(clone_chunk::ChunkError::Checksum { .. }) => panic!("a sealed chunk was refused for its checksum"),
        Err(_) => false,
    }
}

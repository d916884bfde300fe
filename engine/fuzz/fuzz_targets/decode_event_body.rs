//! Arbitrary bytes as a binlog event's type and body, sealed with a valid length and checksum: never a panic,
//! and what decodes re-encodes to the same frame. Reaches the body decoders far more often than `decode_event`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|type_and_body: &[u8]| {
    ferry_fuzz::round_trip::sealed_event_round_trips(type_and_body);
});

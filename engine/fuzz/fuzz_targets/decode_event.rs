//! Arbitrary bytes as a binlog event: never a panic, and what decodes re-encodes to the bytes it consumed.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    ferry_fuzz::round_trip::event_round_trips(bytes);
});

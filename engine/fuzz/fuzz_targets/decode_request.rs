//! Arbitrary bytes as a request frame (no length prefix): never a panic, and what decodes re-encodes to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    ferry_fuzz::round_trip::request_round_trips(bytes);
});

//! Arbitrary bytes as a clone chunk's rows, sealed with their correct CRC32C: never a panic, and what decodes
//! re-encodes to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    ferry_fuzz::round_trip::clone_chunk_round_trips(bytes);
});

//! Arbitrary bytes as GTID position text: never a panic, and format∘parse is stable.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    ferry_fuzz::round_trip::position_round_trips(bytes);
});

//! What the fuzz targets check, kept apart from libFuzzer so stable `cargo test` can replay the corpus with
//! the very same code (ferry-core's `tests/fuzz_corpus.rs` includes [`round_trip`] by path).

pub mod round_trip;

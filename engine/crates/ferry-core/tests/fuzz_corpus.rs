//! Replays the fuzzing corpus (`fuzz/corpus/<target>/`) on stable Rust, through the same checks the fuzz
//! targets run: nothing may panic, and whatever decodes must round-trip byte for byte.
//!
//! The checks live in `fuzz/src/round_trip.rs` and are compiled in here by path, so this test and the fuzz
//! targets cannot drift apart. Each corpus must exist and hold inputs the decoder accepts, so the test
//! cannot pass by reading nothing.

#[path = "../../../fuzz/src/round_trip.rs"]
mod round_trip;

use std::path::PathBuf;

/// Every file of one target's corpus, as (name, bytes), sorted by name.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    assert!(dir.is_dir(), "the {target} corpus is missing: {}", dir.display());
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap()))
        .collect();
    assert!(!inputs.is_empty(), "the {target} corpus is empty: {}", dir.display());
    inputs.sort();
    inputs
}

/// Runs `check` on every input of the corpus; returns how many inputs the decoder accepted.
fn replay(target: &str, check: fn(&[u8]) -> bool) -> usize {
    let inputs = corpus(target);
    let accepted = inputs
        .iter()
        .filter(|(name, bytes)| {
            std::panic::catch_unwind(|| check(bytes))
                .unwrap_or_else(|_| panic!("{target} corpus input {name} fails its check (see the panic above)"))
        })
        .count();
    assert!(accepted > 0, "no input of the {target} corpus decodes, so no round trip was checked");
    accepted
}

#[test]
fn every_binlog_event_in_the_corpus_re_encodes_to_its_bytes() {
    replay("decode_event", round_trip::event_round_trips);
}

#[test]
fn every_sealed_event_body_in_the_corpus_re_encodes_to_its_frame() {
    replay("decode_event_body", round_trip::sealed_event_round_trips);
}

#[test]
fn every_request_frame_in_the_corpus_re_encodes_to_its_bytes() {
    replay("decode_request", round_trip::request_round_trips);
}

#[test]
fn every_position_text_in_the_corpus_formats_stably() {
    replay("parse_position", round_trip::position_round_trips);
}

#[test]
fn every_clone_chunk_in_the_corpus_re_encodes_to_its_bytes() {
    replay("decode_clone_chunk", round_trip::clone_chunk_round_trips);
}

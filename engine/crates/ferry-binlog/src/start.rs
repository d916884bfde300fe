//! `--start-position`: where a replica at that position would start, found as the master finds it.
//!
//! The master's current state is the last file's GTID list plus the transactions written after it; with it,
//! [`find_start`] (strict) tells "ahead of the master" from "a domain the master never wrote".

use std::path::{Path, PathBuf};

use ferry_core::binlog::reader::{read_gtid_list, FileReader, Item, TransactionReader};
use ferry_core::binlog::seek::{find_start, SeekError, StartPoint};
use ferry_core::binlog::BinlogError;
use ferry_core::{BinlogState, GtidPosition};

/// The start point for a replica at `position` reading `files` (in index order).
pub fn start_point(files: &[PathBuf], position: &GtidPosition) -> Result<StartPoint, SeekError> {
    let last = files.last().expect("files_at never returns an empty list");
    let current = current_state(last)?;
    find_start(files, position, &current, true)
}

/// The binlog state at the end of `last`: its GTID list and every whole transaction after it.
/// Reading stops quietly at the first bad event: printing reaches it too, and reports it at its offset.
fn current_state(last: &Path) -> Result<BinlogState, BinlogError> {
    let mut state = BinlogState::from_gtids(read_gtid_list(last)?);
    for item in TransactionReader::new(FileReader::open(last)?) {
        match item {
            Ok(Item::Transaction(txn)) => state.record(txn.gtid()),
            Ok(Item::Other(_)) => {}
            Err(_) => break,
        }
    }
    Ok(state)
}

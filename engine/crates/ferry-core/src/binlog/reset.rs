//! RESET MASTER on disk: every binlog file goes and a new first file (numbered as asked) starts with an empty
//! GTID list. Crash-safe by an intent file: `reset-master.json` is written (durably) before anything is deleted and
//! removed once the store has been moved onto the new binlog; a start-up that finds it completes the reset. The
//! store was made durable before the intent was written, so the old files hold nothing it lacks.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::binlog::{file_seq, intent, sync_dir, write_index_on, BinlogError};
use crate::vfs::Fs;

/// The intent file's name, in the binlog directory.
pub const RESET_INTENT_FILE: &str = "reset-master.json";

/// What a reset in progress is to end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResetIntent {
    /// Sequence number of the new first file (RESET MASTER TO n).
    pub first_seq: u64,
}

fn intent_path(dir: &Path) -> PathBuf {
    dir.join(RESET_INTENT_FILE)
}

/// Records the intent durably.
pub fn write_intent(fs: &dyn Fs, dir: &Path, intent: ResetIntent) -> Result<(), BinlogError> {
    intent::write(fs, dir, &intent_path(dir), &intent, None)
}

/// The reset a crash interrupted, if any.
pub fn read_intent(fs: &dyn Fs, dir: &Path) -> Result<Option<ResetIntent>, BinlogError> {
    intent::read(fs, &intent_path(dir), "RESET MASTER")
}

/// The reset is complete: forgets the intent.
pub fn clear_intent(fs: &dyn Fs, dir: &Path) -> Result<(), BinlogError> {
    intent::clear(fs, dir, &intent_path(dir))
}

/// Empties the index, then deletes every binlog file of `dir` (idempotent: a repeat after a crash finds fewer).
/// Returns the names deleted, in order.
pub fn delete_all_files(fs: &dyn Fs, dir: &Path) -> Result<Vec<String>, BinlogError> {
    write_index_on(fs, dir, &[])?;
    let mut names: Vec<String> = fs
        .list_dir(dir)
        .map_err(|e| BinlogError::io(dir, e))?
        .into_iter()
        .filter(|name| file_seq(name).is_some())
        .collect();
    names.sort_by_key(|n| file_seq(n));
    for name in &names {
        let path = dir.join(name);
        fs.remove_file(&path).map_err(|e| BinlogError::io(&path, e))?;
    }
    sync_dir(fs, dir)?;
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binlog::{file_name, read_index, write_index};
    use crate::vfs::RealFs;

    #[test]
    fn the_intent_round_trips_and_clears() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_intent(&RealFs, dir.path()).unwrap(), None);
        write_intent(&RealFs, dir.path(), ResetIntent { first_seq: 7 }).unwrap();
        assert_eq!(read_intent(&RealFs, dir.path()).unwrap(), Some(ResetIntent { first_seq: 7 }));
        clear_intent(&RealFs, dir.path()).unwrap();
        clear_intent(&RealFs, dir.path()).unwrap();
        assert_eq!(read_intent(&RealFs, dir.path()).unwrap(), None);
    }

    #[test]
    fn deleting_all_files_empties_the_index_first_and_keeps_other_files() {
        let dir = tempfile::tempdir().unwrap();
        for seq in [3, 4] {
            std::fs::write(dir.path().join(file_name(seq)), b"x").unwrap();
        }
        std::fs::write(dir.path().join("seq-no.hwm"), b"{}").unwrap();
        write_index(dir.path(), &[file_name(3), file_name(4)]).unwrap();
        assert_eq!(delete_all_files(&RealFs, dir.path()).unwrap(), [file_name(3), file_name(4)]);
        assert!(read_index(dir.path()).unwrap().is_empty());
        assert!(dir.path().join("seq-no.hwm").exists());
        assert!(delete_all_files(&RealFs, dir.path()).unwrap().is_empty(), "a repeat finds nothing");
    }
}

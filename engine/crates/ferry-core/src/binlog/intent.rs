//! A durable intent record in a binlog directory: what a multi-step DBA command (RESET MASTER, a rewind) is about to
//! do, written before its first change and forgotten after its last, so that the next start completes what a crash
//! interrupted. One JSON file per kind of command, written whole or not at all (temporary file, fsync, rename, fsync
//! of the directory).

use std::io::Write;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::binlog::{sync_dir, BinlogError};
use crate::fault;
use crate::vfs::Fs;

/// Writes `intent` durably at `path` in `dir`. `fault_site` names the failpoint checked before the bytes are written
/// (None: none).
pub fn write<T: Serialize>(
    fs: &dyn Fs,
    dir: &Path,
    path: &Path,
    intent: &T,
    fault_site: Option<&str>,
) -> Result<(), BinlogError> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_vec(intent).expect("an intent serializes");
    fs.create(&tmp)
        .and_then(|mut f| {
            if let Some(site) = fault_site {
                fault::check(site)?;
            }
            f.write_all(&text)?;
            f.sync_all()
        })
        .map_err(|e| BinlogError::io(&tmp, e))?;
    fs.rename(&tmp, path).map_err(|e| BinlogError::io(path, e))?;
    sync_dir(fs, dir)
}

/// The intent at `path` a crash left, if any; `what` names the command in the error for a file that is not one.
pub fn read<T: DeserializeOwned>(fs: &dyn Fs, path: &Path, what: &str) -> Result<Option<T>, BinlogError> {
    match fs.read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| BinlogError::Invalid(format!("{} is not a {what} intent: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(BinlogError::io(path, e)),
    }
}

/// The command is complete: forgets its intent at `path` in `dir` (durably; nothing to do when there is none).
pub fn clear(fs: &dyn Fs, dir: &Path, path: &Path) -> Result<(), BinlogError> {
    match fs.remove_file(path) {
        Ok(()) => sync_dir(fs, dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BinlogError::io(path, e)),
    }
}

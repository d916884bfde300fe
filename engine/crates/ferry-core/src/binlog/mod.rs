//! The binlog: checksummed event files, rotated by size and on demand, listed in an index file.
//!
//! - [`event`]: event kinds and their framing (length, type, body, CRC32C).
//! - [`reader`]: reads events and whole transactions from one file or across the index, checking every checksum.
//! - [`writer`]: appends groups of events, fsyncs, rotates, purges, and recovers a torn tail at open.
//! - [`hwm`]: the durable seq_no high-water mark per domain, so a seq_no is never handed out twice.
//! - [`delete_domain`]: FLUSH BINARY LOGS DELETE_DOMAIN_ID — which domains may leave the binlog state.
//! - [`expiry`]: binlog expiry by age and total size, and the guard that keeps files connected replicas read.
//! - [`listing`]: SHOW BINLOG EVENTS — one file's events from a byte offset, with MariaDB's columns.
//! - [`rewind`]: rewind on disk — what a rewind to a position cuts, the archive of the cut part, the intent that
//!   makes it crash-safe, the binlog's truncation.
//! - [`reset`]: RESET MASTER on disk — every file deleted, a new first file, crash-safe by an intent file.
//! - [`seek`]: where to start streaming for a replica's GTID position, with every error case named.
//!
//! A file is `MAGIC` followed by events: a format description, a GTID list (the full binlog state when the file
//! was opened), transactions (`Gtid`, `Rows`, `Commit`), checkpoints, and a final `Rotate` when it was closed.

pub mod delete_domain;
pub mod event;
pub mod expiry;
pub mod hwm;
pub mod intent;
pub mod listing;
pub mod reader;
pub mod reset;
pub mod rewind;
pub mod seek;
pub mod stream;
pub mod writer;

use std::path::{Path, PathBuf};

use crate::binlog::event::EventError;
use crate::vfs::{self, Fs};

/// The first bytes of every binlog file.
pub const MAGIC: &[u8; 4] = b"\xfeFBL";
/// File names are `BASE_NAME.NNNNNN`; the index is `BASE_NAME.index`.
pub const BASE_NAME: &str = "ferry-bin";

/// Name of the binlog file with sequence number `seq`.
pub fn file_name(seq: u64) -> String {
    format!("{BASE_NAME}.{seq:06}")
}

/// Sequence number of a binlog file name, when it is one.
pub fn file_seq(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(BASE_NAME)?.strip_prefix('.')?;
    (digits.len() >= 6 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok())?
}

pub fn index_path(dir: &Path) -> PathBuf {
    dir.join(format!("{BASE_NAME}.index"))
}

/// A place in the binlog: file sequence number and byte offset. Ordered as the binlog is.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct BinlogCoord {
    pub file_seq: u64,
    pub offset: u64,
}

impl std::fmt::Display for BinlogCoord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", file_name(self.file_seq), self.offset)
    }
}

/// Errors reading or writing binlog files; every corruption names the file and the event's offset.
#[derive(Debug, thiserror::Error)]
pub enum BinlogError {
    #[error("binlog I/O on {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{file} is not a Ferry binlog file (bad magic bytes)")]
    NotABinlog { file: String },
    #[error("corrupt binlog event in {file} at offset {offset}: {reason}")]
    Corrupt { file: String, offset: u64, reason: EventError },
    #[error("unexpected {found} event in {file} at offset {offset}: {expected}")]
    OutOfPlace { file: String, offset: u64, found: &'static str, expected: &'static str },
    #[error("binlog file {file} is listed in the index but {problem}")]
    Missing { file: String, problem: String },
    /// Damage before the binlog's last write: not a torn tail, so nothing is cut; the node does not start.
    #[error(
        "binlog {file} is corrupt at offset {offset} ({reason}), before its last write: this is not a torn tail \
         and nothing was cut; transactions around it: {gtid_range}; locate the damage with `ferry-binlog --verify \
         DIR` and see docs/operations.md (\"A corrupt binlog\") before cutting with `--truncate-at`"
    )]
    CorruptBeforeTail { file: String, offset: u64, reason: String, gtid_range: String },
    #[error("{0}")]
    Invalid(String),
}

impl BinlogError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BinlogError::Io { path: path.into(), source }
    }
}

/// Reads the index: the binlog file names in order (empty when there is no index yet).
pub fn read_index(dir: &Path) -> Result<Vec<String>, BinlogError> {
    read_index_on(&*vfs::real(), dir)
}

/// [`read_index`] on the file layer `fs`.
pub fn read_index_on(fs: &dyn Fs, dir: &Path) -> Result<Vec<String>, BinlogError> {
    let path = index_path(dir);
    let text = fs.read(&path).and_then(|bytes| {
        String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    });
    match text {
        Ok(text) => Ok(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(BinlogError::io(path, e)),
    }
}

/// Replaces the index atomically (temporary file, fsync, rename, fsync of the directory).
pub fn write_index(dir: &Path, files: &[String]) -> Result<(), BinlogError> {
    write_index_on(&*vfs::real(), dir, files)
}

/// [`write_index`] on the file layer `fs`.
pub fn write_index_on(fs: &dyn Fs, dir: &Path, files: &[String]) -> Result<(), BinlogError> {
    let path = index_path(dir);
    let tmp = path.with_extension("index.tmp");
    let mut text = files.join("\n");
    text.push('\n');
    let mut f = fs.create(&tmp).map_err(|e| BinlogError::io(&tmp, e))?;
    crate::fault::write_all(&mut f, text.as_bytes(), crate::fault::sites::BINLOG_INDEX)
        .and_then(|_| f.sync_all())
        .map_err(|e| BinlogError::io(&tmp, e))?;
    fs.rename(&tmp, &path).map_err(|e| BinlogError::io(&path, e))?;
    sync_dir(fs, dir)
}

/// fsyncs a directory, so that the files created, renamed or removed in it stay so after a crash.
pub(crate) fn sync_dir(fs: &dyn Fs, dir: &Path) -> Result<(), BinlogError> {
    fs.sync_dir(dir).map_err(|e| BinlogError::io(dir, e))
}

/// The binlog files to read for `path`: the index's files when it is a directory, else the one file.
pub fn files_at(path: &Path) -> Result<Vec<PathBuf>, BinlogError> {
    if path.is_dir() {
        let names = read_index(path)?;
        if names.is_empty() {
            return Err(BinlogError::Invalid(format!("{} has no {BASE_NAME}.index (or it is empty)", path.display())));
        }
        Ok(names.into_iter().map(|n| path.join(n)).collect())
    } else {
        Ok(vec![path.to_path_buf()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip_and_order() {
        assert_eq!(file_name(7), "ferry-bin.000007");
        assert_eq!(file_seq("ferry-bin.000007"), Some(7));
        assert_eq!(file_seq("ferry-bin.1234567"), Some(1_234_567));
        assert_eq!(file_seq("ferry-bin.index"), None);
        assert_eq!(file_seq("other.000001"), None);
        assert!(BinlogCoord { file_seq: 1, offset: 900 } < BinlogCoord { file_seq: 2, offset: 4 });
    }

    #[test]
    fn the_index_is_replaced_atomically() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_index(dir.path()).unwrap().is_empty());
        write_index(dir.path(), &["ferry-bin.000001".into(), "ferry-bin.000002".into()]).unwrap();
        assert_eq!(read_index(dir.path()).unwrap(), vec!["ferry-bin.000001", "ferry-bin.000002"]);
        assert!(!dir.path().join("ferry-bin.index.tmp").exists());
    }
}

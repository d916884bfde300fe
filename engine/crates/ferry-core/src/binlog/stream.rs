//! Streaming a binlog to a replica: from a [`StartPoint`], whole transactions as raw bytes (each event with the
//! CRC it was written with, so the replica checks what the master wrote), following rotations through the
//! index, never past the coordinate the master has made durable.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::binlog::event::GtidEvent;
use crate::binlog::reader::{FileReader, Item, TransactionReader};
use crate::binlog::seek::StartPoint;
use crate::binlog::{file_name, file_seq, read_index, BinlogCoord, BinlogError, MAGIC};

/// One transaction ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamedTxn {
    pub header: GtidEvent,
    /// The transaction's events exactly as on disk (GTID, rows, commit), checksums included.
    pub raw: Vec<u8>,
    /// Where the transaction ends in the master's binlog.
    pub end: BinlogCoord,
}

/// Reads transactions for one replica, in binlog order.
pub struct BinlogStream {
    dir: PathBuf,
    file_seq: u64,
    reader: TransactionReader,
    /// A second handle on the current file, to copy each transaction's bytes.
    raw: File,
    start: StartPoint,
}

impl BinlogStream {
    /// Opens the stream at a start point found by [`crate::binlog::seek::find_start`] over `files`.
    pub fn open(dir: &Path, files: &[PathBuf], start: StartPoint) -> Result<Self, BinlogError> {
        let path = &files[start.file_index];
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let file_seq = file_seq(&name).ok_or_else(|| BinlogError::Invalid(format!("{name:?} is not a binlog file")))?;
        let reader = TransactionReader::new(FileReader::open_at(path, start.offset)?);
        let raw = File::open(path).map_err(|e| BinlogError::io(path, e))?;
        Ok(BinlogStream { dir: dir.to_path_buf(), file_seq, reader, raw, start })
    }

    /// The next transaction ending at or before `durable` (the master's fsynced end), or None when there is
    /// nothing more to send yet.
    pub fn next(&mut self, durable: BinlogCoord) -> Result<Option<StreamedTxn>, BinlogError> {
        loop {
            if self.file_seq > durable.file_seq {
                return Ok(None);
            }
            let before = self.reader.offset();
            match self.reader.next_item() {
                Some(Ok(Item::Transaction(txn))) => {
                    let end = BinlogCoord { file_seq: self.file_seq, offset: txn.end_offset };
                    if end > durable {
                        // Written but not yet durable: send it later.
                        self.rewind(before)?;
                        return Ok(None);
                    }
                    if !self.start.admit(txn.gtid()) {
                        continue;
                    }
                    let mut raw = vec![0u8; (txn.end_offset - txn.offset) as usize];
                    let path = self.dir.join(file_name(self.file_seq));
                    self.raw.read_exact_at(&mut raw, txn.offset).map_err(|e| BinlogError::io(path, e))?;
                    return Ok(Some(StreamedTxn { header: txn.header, raw, end }));
                }
                Some(Ok(Item::Other(_))) => continue,
                // An event still being written at the end of the newest file: wait for it.
                Some(Err(BinlogError::Corrupt {
                    reason: crate::binlog::event::EventError::Truncated { .. }, ..
                })) if self.file_seq == durable.file_seq => {
                    self.rewind(before)?;
                    return Ok(None);
                }
                Some(Err(e)) => return Err(e),
                None => {
                    if self.file_seq >= durable.file_seq || !self.next_file()? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    fn rewind(&mut self, offset: u64) -> Result<(), BinlogError> {
        let path = self.dir.join(file_name(self.file_seq));
        self.reader = TransactionReader::new(FileReader::open_at(&path, offset)?);
        Ok(())
    }

    /// Moves to the file after the current one in the index; false when there is none yet.
    fn next_file(&mut self) -> Result<bool, BinlogError> {
        let files = read_index(&self.dir)?;
        let Some(next) = files.iter().filter_map(|f| file_seq(f)).find(|s| *s > self.file_seq) else {
            return Ok(false);
        };
        if next != self.file_seq + 1 {
            return Err(BinlogError::Invalid(format!(
                "binlog file {} was purged while a replica was reading {}",
                file_name(self.file_seq + 1),
                file_name(self.file_seq)
            )));
        }
        let path = self.dir.join(file_name(next));
        self.reader = TransactionReader::new(FileReader::open_at(&path, MAGIC.len() as u64)?);
        self.raw = File::open(&path).map_err(|e| BinlogError::io(&path, e))?;
        self.file_seq = next;
        Ok(true)
    }

    /// The file being read.
    pub fn file_seq(&self) -> u64 {
        self.file_seq
    }

    /// Whether the file being read is still the one the binlog has under its name. At the end of the newest file,
    /// `false` means the binlog was started again (RESET MASTER deleted the file, and may have made a new one of
    /// the same name): nothing more will come through this stream.
    pub fn reads_current_file(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let path = self.dir.join(file_name(self.file_seq));
        match (self.raw.metadata(), std::fs::metadata(path)) {
            (Ok(open), Ok(named)) => open.ino() == named.ino() && open.dev() == named.dev(),
            _ => false,
        }
    }
}

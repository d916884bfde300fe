//! The relay log of one replication connection: what the IO side received, in the binlog's event format (each
//! event still carrying the master's CRC32C), waiting for the SQL side to apply it.
//!
//! It is scratch space: a replica discards it whenever a connection starts and re-fetches from its crash-safe
//! gtid_slave_pos, so it is written without fsync. Files are `relay.NNNNNN` in the connection's directory; the
//! writer rotates them at a size, the reader follows them and deletes the ones it has finished.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::binlog::reader::{FileReader, Item, Transaction, TransactionReader};
use crate::binlog::{BinlogCoord, BinlogError, MAGIC};
use crate::fault::{self, sites};

/// Default size at which relay files rotate.
pub const RELAY_FILE_BYTES_MAX: u64 = 16 << 20;

pub fn relay_file_name(seq: u64) -> String {
    format!("relay.{seq:06}")
}

/// Appends received transactions.
pub struct RelayWriter {
    dir: PathBuf,
    file: File,
    file_seq: u64,
    offset: u64,
    file_bytes_max: u64,
}

impl RelayWriter {
    /// Starts an empty relay log in `dir`, removing whatever an earlier run left there.
    pub fn create(dir: &Path, file_bytes_max: u64) -> Result<Self, BinlogError> {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| BinlogError::io(dir, e))?;
        }
        std::fs::create_dir_all(dir).map_err(|e| BinlogError::io(dir, e))?;
        let (file, offset) = Self::new_file(dir, 1)?;
        Ok(RelayWriter { dir: dir.to_path_buf(), file, file_seq: 1, offset, file_bytes_max })
    }

    fn new_file(dir: &Path, seq: u64) -> Result<(File, u64), BinlogError> {
        let path = dir.join(relay_file_name(seq));
        let mut file =
            OpenOptions::new().create_new(true).write(true).open(&path).map_err(|e| BinlogError::io(&path, e))?;
        fault::write_all(&mut file, MAGIC, sites::RELAY_WRITE).map_err(|e| BinlogError::io(&path, e))?;
        Ok((file, MAGIC.len() as u64))
    }

    /// Appends one transaction's events; returns the coordinate the relay log now ends at.
    pub fn append(&mut self, events: &[u8]) -> Result<BinlogCoord, BinlogError> {
        if self.offset >= self.file_bytes_max {
            self.file_seq += 1;
            let (file, offset) = Self::new_file(&self.dir, self.file_seq)?;
            self.file = file;
            self.offset = offset;
        }
        let path = self.dir.join(relay_file_name(self.file_seq));
        fault::write_all(&mut self.file, events, sites::RELAY_WRITE).map_err(|e| BinlogError::io(path, e))?;
        self.offset += events.len() as u64;
        Ok(self.end())
    }

    pub fn end(&self) -> BinlogCoord {
        BinlogCoord { file_seq: self.file_seq, offset: self.offset }
    }
}

/// Reads transactions from a relay log, following the writer.
pub struct RelayReader {
    dir: PathBuf,
    file_seq: u64,
    reader: TransactionReader,
}

impl RelayReader {
    pub fn open(dir: &Path) -> Result<Self, BinlogError> {
        let reader = TransactionReader::new(FileReader::open(&dir.join(relay_file_name(1)))?);
        Ok(RelayReader { dir: dir.to_path_buf(), file_seq: 1, reader })
    }

    /// The next transaction ending at or before `written` (what the writer has finished), or None for now.
    /// A corrupt event is an error naming the relay file and offset.
    pub fn next(&mut self, written: BinlogCoord) -> Result<Option<Transaction>, BinlogError> {
        loop {
            let here = BinlogCoord { file_seq: self.file_seq, offset: self.reader.offset() };
            if here >= written {
                return Ok(None);
            }
            match self.reader.next_item() {
                Some(Ok(Item::Transaction(txn))) => return Ok(Some(txn)),
                Some(Ok(Item::Other(_))) => continue,
                Some(Err(e)) => return Err(e),
                None if self.file_seq < written.file_seq => {
                    let done = self.dir.join(relay_file_name(self.file_seq));
                    self.file_seq += 1;
                    let next = self.dir.join(relay_file_name(self.file_seq));
                    self.reader = TransactionReader::new(FileReader::open(&next)?);
                    std::fs::remove_file(&done).map_err(|e| BinlogError::io(done, e))?;
                }
                None => return Ok(None),
            }
        }
    }

    /// Where the next transaction starts.
    pub fn position(&self) -> BinlogCoord {
        BinlogCoord { file_seq: self.file_seq, offset: self.reader.offset() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binlog::event::{encode_event, Event, GtidEvent};
    use crate::gtid::Gtid;

    fn txn(seq: u64) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_event(
            &Event::Gtid(GtidEvent { gtid: Gtid::new(0, 1, seq), commit_id: 1, flags: 0, commit_ts_us: 0 }),
            &mut buf,
        );
        encode_event(&Event::Rows { changes: vec![] }, &mut buf);
        encode_event(&Event::Commit { changes: 0 }, &mut buf);
        buf
    }

    #[test]
    fn the_reader_follows_the_writer_across_rotations_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let relay = dir.path().join("relay");
        let mut w = RelayWriter::create(&relay, 200).unwrap();
        let mut r = RelayReader::open(&relay).unwrap();
        assert_eq!(r.next(w.end()).unwrap(), None);
        let mut written = w.end();
        for seq in 1..=10 {
            written = w.append(&txn(seq)).unwrap();
        }
        let mut seen = Vec::new();
        while let Some(t) = r.next(written).unwrap() {
            seen.push(t.gtid().seq);
        }
        assert_eq!(seen, (1..=10).collect::<Vec<_>>());
        assert!(written.file_seq > 1, "it rotated");
        assert!(!relay.join(relay_file_name(1)).exists(), "finished files are deleted");
        // A new start discards what was there.
        let w = RelayWriter::create(&relay, 200).unwrap();
        assert_eq!(w.end().file_seq, 1);
        assert_eq!(std::fs::read_dir(&relay).unwrap().count(), 1);
    }

    #[test]
    fn a_corrupt_relay_event_names_the_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let relay = dir.path().join("relay");
        let mut w = RelayWriter::create(&relay, 1 << 20).unwrap();
        w.append(&txn(1)).unwrap();
        let second = w.end().offset;
        let mut bad = txn(2);
        bad[7] ^= 0xff;
        let written = w.append(&bad).unwrap();
        let mut r = RelayReader::open(&relay).unwrap();
        assert!(r.next(written).unwrap().is_some());
        let err = r.next(written).unwrap_err().to_string();
        assert!(err.contains("relay.000001") && err.contains(&format!("offset {second}")), "{err}");
    }
}

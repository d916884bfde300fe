//! The relay log of one replication connection: what the IO side received, in the binlog's event format (each
//! event still carrying the master's CRC32C), waiting for the SQL side to apply it.
//!
//! It is scratch space: a replica discards it whenever a connection starts and re-fetches from its crash-safe
//! gtid_slave_pos, so it is written without fsync. Files are `relay.NNNNNN` in the connection's directory; the
//! writer rotates them at a size, the reader follows them and deletes the ones it has finished. Both go through
//! the file layer ([`crate::vfs`]): the real file system, or the simulated disk of the replica simulation.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::binlog::reader::{FileReader, Item, Transaction, TransactionReader};
use crate::binlog::{BinlogCoord, BinlogError, MAGIC};
use crate::fault::{self, sites};
use crate::vfs::{self, Fs, FsFile};

/// Default size at which relay files rotate.
pub const RELAY_FILE_BYTES_MAX: u64 = 16 << 20;

/// The size at which relay files rotate under a relay log space bound: a quarter of it (at most
/// [`RELAY_FILE_BYTES_MAX`]), so that the SQL side frees space in steps well below the bound.
pub fn relay_file_bytes_for(space_bytes_max: u64) -> u64 {
    (space_bytes_max / 4).clamp(MAGIC.len() as u64 + 1, RELAY_FILE_BYTES_MAX)
}

/// Bytes a relay log's files take on disk: raised by the writer as it appends, lowered by the reader as it
/// deletes the files it has finished. Shared by the two sides of a connection.
#[derive(Debug, Default)]
pub struct RelaySpace(AtomicU64);

impl RelaySpace {
    pub fn bytes(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    fn add(&self, bytes: u64) {
        self.0.fetch_add(bytes, Ordering::AcqRel);
    }

    fn sub(&self, bytes: u64) {
        // Saturating: never below zero, whatever the file sizes said.
        let _ = self.0.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| Some(v.saturating_sub(bytes)));
    }
}

pub fn relay_file_name(seq: u64) -> String {
    format!("relay.{seq:06}")
}

/// Appends received transactions.
pub struct RelayWriter {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    file: Box<dyn FsFile>,
    file_seq: u64,
    offset: u64,
    file_bytes_max: u64,
    space: Arc<RelaySpace>,
}

impl RelayWriter {
    /// Starts an empty relay log in `dir` on the real file system, removing whatever an earlier run left there.
    pub fn create(dir: &Path, file_bytes_max: u64) -> Result<Self, BinlogError> {
        Self::create_on(vfs::real(), dir, file_bytes_max)
    }

    /// [`RelayWriter::create`] on the file layer `fs`.
    pub fn create_on(fs: Arc<dyn Fs>, dir: &Path, file_bytes_max: u64) -> Result<Self, BinlogError> {
        if fs.exists(dir) {
            // The relay directory holds only relay files.
            for name in fs.list_dir(dir).map_err(|e| BinlogError::io(dir, e))? {
                let path = dir.join(name);
                fs.remove_file(&path).map_err(|e| BinlogError::io(&path, e))?;
            }
        }
        fs.create_dir_all(dir).map_err(|e| BinlogError::io(dir, e))?;
        let (file, offset) = Self::new_file(&*fs, dir, 1)?;
        let space = Arc::new(RelaySpace::default());
        space.add(offset);
        Ok(RelayWriter { fs, dir: dir.to_path_buf(), file, file_seq: 1, offset, file_bytes_max, space })
    }

    /// A reader of this relay log from its start, sharing its space count.
    pub fn reader(&self) -> Result<RelayReader, BinlogError> {
        RelayReader::open_with(self.fs.clone(), &self.dir, self.space.clone())
    }

    /// Bytes the relay log's files take on disk now.
    pub fn space_bytes(&self) -> u64 {
        self.space.bytes()
    }

    /// Whether appending `len` bytes keeps the relay log's files within `space_bytes_max`, with room left for
    /// one more file header (so that [`RelayWriter::rotate`] never passes it either). A relay log that holds
    /// no transaction takes any one, however large, so that one larger than the bound is still received.
    pub fn fits(&self, len: u64, space_bytes_max: u64) -> bool {
        let header = MAGIC.len() as u64;
        let space = self.space.bytes();
        let rotation = if self.offset >= self.file_bytes_max { header } else { 0 };
        space + len + rotation + header <= space_bytes_max || space <= header
    }

    /// What the relay log's files take on disk, as the reader lowers it too.
    pub fn space(&self) -> Arc<RelaySpace> {
        self.space.clone()
    }

    fn new_file(fs: &dyn Fs, dir: &Path, seq: u64) -> Result<(Box<dyn FsFile>, u64), BinlogError> {
        let path = dir.join(relay_file_name(seq));
        if fs.exists(&path) {
            return Err(BinlogError::Invalid(format!("relay file {} exists already", path.display())));
        }
        let mut file = fs.create(&path).map_err(|e| BinlogError::io(&path, e))?;
        fault::write_all(&mut file, MAGIC, sites::RELAY_WRITE).map_err(|e| BinlogError::io(&path, e))?;
        Ok((file, MAGIC.len() as u64))
    }

    /// Appends one transaction's events; returns the coordinate the relay log now ends at.
    pub fn append(&mut self, events: &[u8]) -> Result<BinlogCoord, BinlogError> {
        if self.offset >= self.file_bytes_max {
            self.next_file()?;
        }
        let path = self.dir.join(relay_file_name(self.file_seq));
        fault::write_all(&mut self.file, events, sites::RELAY_WRITE).map_err(|e| BinlogError::io(path, e))?;
        self.offset += events.len() as u64;
        self.space.add(events.len() as u64);
        Ok(self.end())
    }

    /// Starts a new file unless the current one holds no transaction yet, so that the reader can delete the
    /// current one once it has read it (the IO side does this when it waits for relay space). Returns the end.
    pub fn rotate(&mut self) -> Result<BinlogCoord, BinlogError> {
        if self.offset > MAGIC.len() as u64 {
            self.next_file()?;
        }
        Ok(self.end())
    }

    fn next_file(&mut self) -> Result<(), BinlogError> {
        let (file, offset) = Self::new_file(&*self.fs, &self.dir, self.file_seq + 1)?;
        self.file_seq += 1;
        self.file = file;
        self.offset = offset;
        self.space.add(offset);
        Ok(())
    }

    pub fn end(&self) -> BinlogCoord {
        BinlogCoord { file_seq: self.file_seq, offset: self.offset }
    }
}

/// Reads transactions from a relay log, following the writer.
pub struct RelayReader {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    file_seq: u64,
    reader: TransactionReader,
    space: Arc<RelaySpace>,
}

impl RelayReader {
    /// A reader of the relay log in `dir` (one that keeps its own space count: see [`RelayWriter::reader`]).
    pub fn open(dir: &Path) -> Result<Self, BinlogError> {
        Self::open_with(vfs::real(), dir, Arc::new(RelaySpace::default()))
    }

    fn open_with(fs: Arc<dyn Fs>, dir: &Path, space: Arc<RelaySpace>) -> Result<Self, BinlogError> {
        let reader = TransactionReader::new(FileReader::open_on(&*fs, &dir.join(relay_file_name(1)))?);
        Ok(RelayReader { fs, dir: dir.to_path_buf(), file_seq: 1, reader, space })
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
                    // A finished file was read to its end: its size is where the reader stands.
                    let done_bytes = self.reader.offset();
                    let next = self.dir.join(relay_file_name(self.file_seq + 1));
                    self.reader = TransactionReader::new(FileReader::open_on(&*self.fs, &next)?);
                    self.file_seq += 1;
                    self.fs.remove_file(&done).map_err(|e| BinlogError::io(done, e))?;
                    self.space.sub(done_bytes);
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

    fn disk_bytes(dir: &Path) -> u64 {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
    }

    #[test]
    fn the_space_count_is_the_files_on_disk_and_a_rotation_lets_the_reader_free_what_it_read() {
        let dir = tempfile::tempdir().unwrap();
        let relay = dir.path().join("relay");
        let mut w = RelayWriter::create(&relay, 1 << 20).unwrap();
        let mut r = w.reader().unwrap();
        let space = w.space();
        assert_eq!(space.bytes(), MAGIC.len() as u64);
        let mut written = w.end();
        for seq in 1..=5 {
            written = w.append(&txn(seq)).unwrap();
            assert_eq!(space.bytes(), disk_bytes(&relay));
        }
        while r.next(written).unwrap().is_some() {}
        assert!(space.bytes() > MAGIC.len() as u64, "the file being written is kept");
        assert_eq!(space.bytes(), disk_bytes(&relay));
        let written = w.rotate().unwrap();
        assert_eq!(written.file_seq, 2);
        assert_eq!(w.rotate().unwrap(), written, "a file without transactions is not rotated");
        assert_eq!(r.next(written).unwrap(), None);
        assert_eq!(space.bytes(), MAGIC.len() as u64, "the finished file is deleted and no longer counted");
        assert_eq!(disk_bytes(&relay), MAGIC.len() as u64);
        // Rotations at the file size are counted the same way.
        let mut w = RelayWriter::create(&relay, 200).unwrap();
        let mut r = w.reader().unwrap();
        let space = w.space();
        let mut written = w.end();
        for seq in 1..=20 {
            written = w.append(&txn(seq)).unwrap();
            assert_eq!(space.bytes(), disk_bytes(&relay));
        }
        while r.next(written).unwrap().is_some() {
            assert_eq!(space.bytes(), disk_bytes(&relay));
        }
        assert_eq!(space.bytes(), disk_bytes(&relay));
    }

    #[test]
    fn a_transaction_fits_only_with_room_for_a_file_header_unless_the_relay_log_holds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RelayWriter::create(&dir.path().join("relay"), 1 << 20).unwrap();
        let len = txn(1).len() as u64;
        let header = MAGIC.len() as u64;
        // Empty: anything fits, even over the bound.
        assert!(w.fits(10 * len, len));
        w.append(&txn(1)).unwrap();
        let space = header + len;
        assert!(w.fits(len, space + len + header));
        assert!(!w.fits(len, space + len + header - 1));
        let mut r = w.reader().unwrap();
        let end = w.rotate().unwrap();
        while r.next(end).unwrap().is_some() {}
        assert_eq!(r.next(end).unwrap(), None);
        assert_eq!(w.space_bytes(), header);
        assert!(w.fits(10 * len, len), "read and deleted: empty again");
    }

    #[test]
    fn relay_files_are_a_quarter_of_the_space_bound_at_most_the_default_size() {
        assert_eq!(relay_file_bytes_for(1 << 30), RELAY_FILE_BYTES_MAX);
        assert_eq!(relay_file_bytes_for(64 << 10), 16 << 10);
        assert_eq!(relay_file_bytes_for(0), MAGIC.len() as u64 + 1);
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

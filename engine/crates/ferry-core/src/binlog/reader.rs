//! Reading binlog files: events one by one (checksum checked on every read) and whole transactions.
//!
//! A reader stops cleanly at the end of what is written; an incomplete last event is reported as
//! [`EventError::Truncated`] and the reader rewinds to it, so a reader following a live file can try again.

use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::binlog::event::{decode_event, framed_len, Event, EventError, GtidEvent, EVENT_HEADER_BYTES};
use crate::binlog::{BinlogError, MAGIC};
use crate::gtid::Gtid;
use crate::row::RowChange;
use crate::vfs::{self, Fs, FsFile};

/// One event as read, with where it sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadEvent {
    pub file: String,
    pub offset: u64,
    pub len: u64,
    #[serde(flatten)]
    pub event: Event,
}

/// Reads events from one binlog file.
pub struct FileReader {
    path: PathBuf,
    /// File name (without directory) used in every error and event.
    name: String,
    input: BufReader<Box<dyn FsFile>>,
    /// Offset of the next event to read.
    offset: u64,
    /// Reused buffer for the current event's bytes.
    buf: Vec<u8>,
}

impl FileReader {
    /// Opens `path` and checks the magic bytes; reading starts at the first event.
    pub fn open(path: &Path) -> Result<Self, BinlogError> {
        Self::open_on(&*vfs::real(), path)
    }

    /// [`FileReader::open`] on the file layer `fs`.
    pub fn open_on(fs: &dyn Fs, path: &Path) -> Result<Self, BinlogError> {
        let file = fs.open_read(path).map_err(|e| BinlogError::io(path, e))?;
        let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        let mut input = BufReader::with_capacity(256 << 10, file);
        let mut magic = [0u8; 4];
        match input.read_exact(&mut magic) {
            Ok(()) if &magic == MAGIC => {}
            Ok(()) => return Err(BinlogError::NotABinlog { file: name }),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(BinlogError::NotABinlog { file: name })
            }
            Err(e) => return Err(BinlogError::io(path, e)),
        }
        Ok(FileReader { path: path.to_path_buf(), name, input, offset: MAGIC.len() as u64, buf: Vec::new() })
    }

    /// Opens `path` positioned at `offset` (which must be an event boundary).
    pub fn open_at(path: &Path, offset: u64) -> Result<Self, BinlogError> {
        Self::open_at_on(&*vfs::real(), path, offset)
    }

    /// [`FileReader::open_at`] on the file layer `fs`.
    pub fn open_at_on(fs: &dyn Fs, path: &Path, offset: u64) -> Result<Self, BinlogError> {
        let mut reader = FileReader::open_on(fs, path)?;
        reader.seek(offset)?;
        Ok(reader)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Offset of the next event.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn seek(&mut self, offset: u64) -> Result<(), BinlogError> {
        self.input.seek(SeekFrom::Start(offset)).map_err(|e| BinlogError::io(&self.path, e))?;
        self.offset = offset;
        Ok(())
    }

    fn corrupt(&self, reason: EventError) -> BinlogError {
        BinlogError::Corrupt { file: self.name.clone(), offset: self.offset, reason }
    }

    /// Reads as many bytes as are there, up to `buf.len()`; returns how many.
    fn read_up_to(&mut self, from: usize) -> Result<usize, BinlogError> {
        let mut filled = from;
        while filled < self.buf.len() {
            match self.input.read(&mut self.buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(BinlogError::io(&self.path, e)),
            }
        }
        Ok(filled)
    }

    /// The next event; `None` at a clean end of file. A partial event at the end is an error
    /// (`EventError::Truncated`) after which the reader is back at that event's start.
    pub fn next_event(&mut self) -> Option<Result<ReadEvent, BinlogError>> {
        self.buf.resize(EVENT_HEADER_BYTES, 0);
        let got = match self.read_up_to(0) {
            Ok(n) => n,
            Err(e) => return Some(Err(e)),
        };
        if got == 0 {
            return None;
        }
        let result = framed_len(&self.buf[..got]).and_then(|total| {
            self.buf.resize(total, 0);
            let got = self
                .read_up_to(EVENT_HEADER_BYTES)
                .map_err(|_| EventError::Truncated { needed: total, available: 0 })?;
            decode_event(&self.buf[..got])
        });
        match result {
            Ok((event, len)) => {
                let read = ReadEvent { file: self.name.clone(), offset: self.offset, len: len as u64, event };
                self.offset += len as u64;
                Some(Ok(read))
            }
            Err(reason) => {
                let err = self.corrupt(reason);
                // Rewind so a follower of a live file can retry once the writer has finished the event.
                if let Err(e) = self.seek(self.offset) {
                    return Some(Err(e));
                }
                Some(Err(err))
            }
        }
    }
}

impl Iterator for FileReader {
    type Item = Result<ReadEvent, BinlogError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event()
    }
}

/// A whole transaction as logged: its GTID event and all its row changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transaction {
    pub file: String,
    /// Offset of the GTID event.
    pub offset: u64,
    /// Offset just past the commit event.
    pub end_offset: u64,
    #[serde(flatten)]
    pub header: GtidEvent,
    pub changes: Vec<RowChange>,
}

impl Transaction {
    pub fn gtid(&self) -> Gtid {
        self.header.gtid
    }
}

/// What a transaction-level read yields: a complete transaction, or an event outside any transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Transaction(Transaction),
    Other(ReadEvent),
}

/// Groups a file's events into transactions, checking their shape (GTID, rows…, commit with the right count).
pub struct TransactionReader {
    events: FileReader,
}

impl TransactionReader {
    pub fn new(events: FileReader) -> Self {
        TransactionReader { events }
    }

    pub fn offset(&self) -> u64 {
        self.events.offset()
    }

    pub fn name(&self) -> &str {
        self.events.name()
    }

    pub fn into_inner(self) -> FileReader {
        self.events
    }

    fn out_of_place(ev: &ReadEvent, expected: &'static str) -> BinlogError {
        BinlogError::OutOfPlace { file: ev.file.clone(), offset: ev.offset, found: ev.event.type_name(), expected }
    }

    /// The next complete item; `None` at a clean end. An incomplete transaction at the end of the file is
    /// reported as truncated at its GTID event, and the reader rewinds there.
    pub fn next_item(&mut self) -> Option<Result<Item, BinlogError>> {
        let first = match self.events.next_event()? {
            Ok(ev) => ev,
            Err(e) => return Some(Err(e)),
        };
        let header = match first.event {
            Event::Gtid(g) => g,
            Event::Rows { .. } | Event::Commit { .. } => {
                return Some(Err(Self::out_of_place(&first, "expected a GTID event first")))
            }
            _ => return Some(Ok(Item::Other(first))),
        };
        let mut changes = Vec::new();
        loop {
            let ev = match self.events.next_event() {
                None => {
                    let needed = 1;
                    let _ = self.events.seek(first.offset);
                    return Some(Err(BinlogError::Corrupt {
                        file: first.file,
                        offset: first.offset,
                        reason: EventError::Truncated { needed, available: 0 },
                    }));
                }
                Some(Err(e)) => {
                    let _ = self.events.seek(first.offset);
                    return Some(Err(e));
                }
                Some(Ok(ev)) => ev,
            };
            match ev.event {
                Event::Rows { changes: more } => changes.extend(more),
                Event::Commit { changes: count } if count as usize == changes.len() => {
                    return Some(Ok(Item::Transaction(Transaction {
                        file: first.file,
                        offset: first.offset,
                        end_offset: ev.offset + ev.len,
                        header,
                        changes,
                    })))
                }
                Event::Commit { .. } => {
                    return Some(Err(Self::out_of_place(&ev, "commit event's row count differs from the rows read")))
                }
                _ => return Some(Err(Self::out_of_place(&ev, "expected rows or commit inside a transaction"))),
            }
        }
    }
}

impl Iterator for TransactionReader {
    type Item = Result<Item, BinlogError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_item()
    }
}

/// Reads the GTID list of a file (its second event): the binlog state when the file was opened.
pub fn read_gtid_list(path: &Path) -> Result<Vec<Gtid>, BinlogError> {
    read_gtid_list_on(&*vfs::real(), path)
}

/// [`read_gtid_list`] on the file layer `fs`.
pub fn read_gtid_list_on(fs: &dyn Fs, path: &Path) -> Result<Vec<Gtid>, BinlogError> {
    let mut reader = FileReader::open_on(fs, path)?;
    let fd = reader.next_event().unwrap_or_else(|| {
        Err(BinlogError::Missing { file: reader.name().to_string(), problem: "has no format description".into() })
    })?;
    if !matches!(fd.event, Event::FormatDescription(_)) {
        return Err(BinlogError::OutOfPlace {
            file: fd.file,
            offset: fd.offset,
            found: fd.event.type_name(),
            expected: "a file must open with a format description",
        });
    }
    let list = reader.next_event().unwrap_or_else(|| {
        Err(BinlogError::Missing { file: reader.name().to_string(), problem: "has no GTID list".into() })
    })?;
    match list.event {
        Event::GtidList { gtids } => Ok(gtids),
        other => Err(BinlogError::OutOfPlace {
            file: list.file,
            offset: list.offset,
            found: other.type_name(),
            expected: "the second event of a file must be its GTID list",
        }),
    }
}

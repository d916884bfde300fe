//! `read_binlog`: a lazy Python iterator over a binlog file, or over every file a binlog directory's index
//! lists (in index order), yielding event dicts or, with `transactions=True`, transaction dicts.
//!
//! The path is checked and the first file opened when `read_binlog` is called, so a missing path raises
//! `FileNotFoundError` there; later files are opened as reading reaches them. Each event's checksum is
//! verified as it is read: damage raises `BinlogCorruptError` at the damaged event, after everything before
//! it was yielded, and ends the iteration. `domains` keeps only the transactions of those domains (in event
//! mode their GTID, rows and commit events); events outside transactions always pass in event mode, and
//! transaction mode yields transactions only.

use std::collections::BTreeSet;
use std::path::PathBuf;

use ferry_core::binlog::event::Event;
use ferry_core::binlog::reader::{FileReader, Item, ReadEvent, Transaction, TransactionReader};
use ferry_core::binlog::{files_at, BinlogError};
use ferry_core::gtid::DomainId;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt};

use crate::errors::binlog_error;
use crate::events::{event_dict, transaction_dict};

/// Where reading is inside the current file.
enum Cursor {
    Events(FileReader),
    Transactions(TransactionReader),
}

/// What one step of the current file produced.
enum Step {
    EndOfFile,
    Item(Yielded),
    /// An event outside any transaction, in transaction mode.
    Skip,
}

/// What the iterator yields, before it becomes a dict.
enum Yielded {
    Event(ReadEvent),
    Transaction(Transaction),
}

/// Iterator returned by `read_binlog`; not constructible from Python.
#[pyclass(module = "ferry_engine")]
pub struct BinlogReader {
    files: Vec<PathBuf>,
    /// Index in `files` of the next file to open.
    next_file: usize,
    current: Option<Cursor>,
    transactions: bool,
    domains: Option<BTreeSet<DomainId>>,
    /// Event mode: inside a transaction whose domain is filtered out (until its commit event).
    skipping: bool,
    /// Set at the end of the last file or after an error; the iterator then stays exhausted.
    finished: bool,
}

impl BinlogReader {
    fn open_next(&mut self) -> Result<(), BinlogError> {
        let Some(path) = self.files.get(self.next_file) else {
            self.finished = true;
            return Ok(());
        };
        let reader = FileReader::open(path)?;
        self.next_file += 1;
        self.skipping = false;
        self.current = Some(if self.transactions {
            Cursor::Transactions(TransactionReader::new(reader))
        } else {
            Cursor::Events(reader)
        });
        Ok(())
    }

    fn wanted(&self, domain: DomainId) -> bool {
        self.domains.as_ref().is_none_or(|d| d.contains(&domain))
    }

    /// Whether an event passes the domain filter, tracking which transaction it belongs to.
    fn keep_event(&mut self, event: &Event) -> bool {
        match event {
            Event::Gtid(g) => {
                self.skipping = !self.wanted(g.gtid.domain);
                !self.skipping
            }
            Event::Rows { .. } => !self.skipping,
            Event::Commit { .. } => !std::mem::replace(&mut self.skipping, false),
            _ => true,
        }
    }

    fn step(cursor: &mut Cursor) -> Result<Step, BinlogError> {
        Ok(match cursor {
            Cursor::Events(r) => match r.next_event().transpose()? {
                None => Step::EndOfFile,
                Some(ev) => Step::Item(Yielded::Event(ev)),
            },
            Cursor::Transactions(r) => match r.next_item().transpose()? {
                None => Step::EndOfFile,
                Some(Item::Transaction(t)) => Step::Item(Yielded::Transaction(t)),
                Some(Item::Other(_)) => Step::Skip,
            },
        })
    }

    /// The next item that passes the domain filter, opening the next file at the end of one.
    fn advance(&mut self) -> Result<Option<Yielded>, BinlogError> {
        loop {
            if self.finished {
                return Ok(None);
            }
            let Some(cursor) = self.current.as_mut() else {
                self.open_next()?;
                continue;
            };
            match Self::step(cursor)? {
                Step::EndOfFile => self.current = None,
                Step::Skip => {}
                Step::Item(Yielded::Event(ev)) => {
                    if self.keep_event(&ev.event) {
                        return Ok(Some(Yielded::Event(ev)));
                    }
                }
                Step::Item(Yielded::Transaction(t)) => {
                    if self.wanted(t.gtid().domain) {
                        return Ok(Some(Yielded::Transaction(t)));
                    }
                }
            }
        }
    }
}

#[pymethods]
impl BinlogReader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        match self.advance() {
            Ok(None) => Ok(None),
            Ok(Some(Yielded::Event(ev))) => event_dict(py, &ev).map(Some),
            Ok(Some(Yielded::Transaction(t))) => transaction_dict(py, &t).map(Some),
            Err(e) => {
                self.finished = true;
                self.current = None;
                Err(binlog_error(py, e))
            }
        }
    }

    /// The binlog files this reader reads, in order.
    #[getter]
    fn files(&self) -> Vec<String> {
        self.files.iter().map(|p| p.display().to_string()).collect()
    }
}

fn domain_filter(domains: Option<&Bound<'_, PyAny>>) -> PyResult<Option<BTreeSet<DomainId>>> {
    let Some(domains) = domains else {
        return Ok(None);
    };
    if domains.is_instance_of::<PyInt>() {
        return Ok(Some(BTreeSet::from([domains.extract::<DomainId>()?])));
    }
    let mut set = BTreeSet::new();
    for item in domains.try_iter()? {
        set.insert(item?.extract::<DomainId>()?);
    }
    Ok(Some(set))
}

/// Reads a binlog file, or a binlog directory through its index; see the module docs.
#[pyfunction]
#[pyo3(signature = (path, *, domains = None, transactions = false))]
pub fn read_binlog(
    py: Python<'_>,
    path: PathBuf,
    domains: Option<&Bound<'_, PyAny>>,
    transactions: bool,
) -> PyResult<BinlogReader> {
    let domains = domain_filter(domains)?;
    let files = files_at(&path).map_err(|e| binlog_error(py, e))?;
    let mut reader =
        BinlogReader { files, next_file: 0, current: None, transactions, domains, skipping: false, finished: false };
    reader.open_next().map_err(|e| binlog_error(py, e))?;
    Ok(reader)
}

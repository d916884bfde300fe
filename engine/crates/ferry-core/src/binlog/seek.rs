//! Where a replica (or `ferry-binlog --start-position`) starts reading, given its GTID position.
//!
//! The rules of design.md: walk the files newest to oldest and pick the first whose GTID list the position has
//! reached in every domain; from there, each domain starts just after the replica's GTID. The replica's GTID must
//! really be in the binlog: a purged, diverged or ahead position, or one that lands on a hole, is an error naming
//! the domain and both GTIDs. A domain the replica has never seen starts at its first event; a domain only the
//! replica has (the master never wrote it, as in multi-source setups) is ignored until the master writes it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::binlog::reader::{read_gtid_list, FileReader, Item, TransactionReader};
use crate::binlog::{BinlogError, MAGIC};
use crate::gtid::{BinlogState, DomainId, Gtid, GtidPosition};

/// Why a start position cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum SeekError {
    #[error("domain {domain}: the replica is at {replica}, but the master's oldest binlog ({file}) starts after {oldest}: the transactions in between were purged")]
    Purged { domain: DomainId, replica: String, oldest: Gtid, file: String },
    #[error("domain {domain}: the replica is at {replica}, ahead of the master, whose newest GTID is {master}")]
    ReplicaAhead { domain: DomainId, replica: Gtid, master: Gtid },
    #[error("domain {domain}: the replica's GTID {replica} is not in the master's binlog, which has {master} there: the servers have diverged")]
    Diverged { domain: DomainId, replica: Gtid, master: Gtid },
    #[error("domain {domain}: the replica's GTID {replica} falls in a hole of the master's binlog (next is {master}); strict mode refuses to guess")]
    Hole { domain: DomainId, replica: Gtid, master: Gtid },
    #[error(transparent)]
    Binlog(#[from] BinlogError),
}

/// Where to start and which domains to skip until their GTID has gone by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartPoint {
    /// Index of the file to start in, among the files given to [`find_start`].
    pub file_index: usize,
    /// Offset in that file of the first event to read (just past its header).
    pub offset: u64,
    /// Domains whose events are skipped up to and including this GTID.
    pub skip_through: BTreeMap<DomainId, Gtid>,
}

impl StartPoint {
    /// Whether a transaction with `gtid` is to be sent; updates the skip state as GTIDs go by.
    pub fn admit(&mut self, gtid: Gtid) -> bool {
        match self.skip_through.get(&gtid.domain) {
            None => true,
            Some(last) if *last == gtid => {
                self.skip_through.remove(&gtid.domain);
                false
            }
            // Only reachable past a hole with strict mode off: the domain resumes at the first GTID above.
            Some(last) if gtid.seq > last.seq => {
                self.skip_through.remove(&gtid.domain);
                true
            }
            Some(_) => false,
        }
    }
}

/// Offset of the first event after the format description and GTID list of a file.
fn after_header(path: &Path) -> Result<u64, BinlogError> {
    let mut reader = FileReader::open(path)?;
    for _ in 0..2 {
        reader.next_event().unwrap_or_else(|| Err(BinlogError::Invalid(format!("{} has no header", path.display()))))?;
    }
    Ok(reader.offset())
}

/// Finds where to start reading `files` (in index order) for a replica at `position`.
/// `current` is the master's whole binlog state now (to tell "ahead" from "never seen").
pub fn find_start(files: &[PathBuf], position: &GtidPosition, current: &BinlogState, strict: bool) -> Result<StartPoint, SeekError> {
    assert!(!files.is_empty(), "a binlog always has a file");
    let lists: Vec<BinlogState> =
        files.iter().map(|f| read_gtid_list(f).map(BinlogState::from_gtids)).collect::<Result<_, _>>()?;

    // Newest to oldest, the first file whose GTID list the replica has reached in every domain.
    let reached = |list: &BinlogState| list.position().iter().all(|g| position.get(g.domain).is_some_and(|p| p.seq >= g.seq));
    let Some(file_index) = (0..files.len()).rev().find(|&i| reached(&lists[i])) else {
        let oldest = lists[0].position();
        let g = oldest.iter().find(|g| position.get(g.domain).is_none_or(|p| p.seq < g.seq)).expect("some domain is unreached");
        return Err(SeekError::Purged {
            domain: g.domain,
            replica: position.get(g.domain).map_or_else(|| "nothing in that domain".to_string(), |p| p.to_string()),
            oldest: g,
            file: file_name_of(&files[0]),
        });
    };

    // Domains whose replica GTID is exactly the file's starting point need no skipping.
    let list = lists[file_index].position();
    let mut pending: BTreeMap<DomainId, Gtid> = BTreeMap::new();
    for mine in position.iter() {
        match list.get(mine.domain) {
            Some(start) if start == mine => {}
            Some(start) if start.seq == mine.seq => {
                return Err(SeekError::Diverged { domain: mine.domain, replica: mine, master: start })
            }
            _ => {
                pending.insert(mine.domain, mine);
            }
        }
    }
    let offset = after_header(&files[file_index])?;
    let start = StartPoint { file_index, offset, skip_through: pending.clone() };

    // Verify every pending GTID is really there by reading forward until each is found or proven absent.
    'files: for (i, path) in files.iter().enumerate().skip(file_index) {
        if pending.is_empty() {
            break;
        }
        let begin = if i == file_index { offset } else { MAGIC.len() as u64 };
        for item in TransactionReader::new(FileReader::open_at(path, begin)?) {
            let Item::Transaction(txn) = item? else { continue };
            let seen = txn.gtid();
            let Some(&wanted) = pending.get(&seen.domain) else { continue };
            if seen == wanted {
                pending.remove(&seen.domain);
            } else if seen.seq == wanted.seq {
                return Err(SeekError::Diverged { domain: seen.domain, replica: wanted, master: seen });
            } else if seen.seq > wanted.seq {
                if strict {
                    return Err(SeekError::Hole { domain: seen.domain, replica: wanted, master: seen });
                }
                // Without strict mode the domain simply resumes at the next GTID above the replica's.
                pending.remove(&seen.domain);
            }
            if pending.is_empty() {
                break 'files;
            }
        }
    }
    for (domain, wanted) in pending {
        if let Some(master) = current.position().get(domain) {
            if master.seq < wanted.seq {
                return Err(SeekError::ReplicaAhead { domain, replica: wanted, master });
            }
            return Err(SeekError::Diverged { domain, replica: wanted, master });
        }
        // The master never wrote this domain: nothing of it to send or skip.
    }
    let mut start = start;
    start.skip_through.retain(|d, _| current.position().get(*d).is_some());
    Ok(start)
}

fn file_name_of(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The GTID position a legacy `(file, offset)` coordinate corresponds to: the file's GTID list plus every
/// transaction that ends at or before `offset`.
pub fn position_at(path: &Path, offset: u64) -> Result<GtidPosition, BinlogError> {
    let mut state = BinlogState::from_gtids(read_gtid_list(path)?);
    for item in TransactionReader::new(FileReader::open(path)?) {
        match item? {
            Item::Transaction(txn) if txn.end_offset <= offset => state.record(txn.gtid()),
            Item::Transaction(txn) if txn.offset < offset => {
                return Err(BinlogError::Invalid(format!(
                    "offset {offset} of {} falls inside transaction {} (it spans {}..{})",
                    file_name_of(path),
                    txn.gtid(),
                    txn.offset,
                    txn.end_offset
                )))
            }
            Item::Transaction(_) => break,
            Item::Other(ev) if ev.offset >= offset => break,
            Item::Other(_) => {}
        }
    }
    Ok(state.position().clone())
}

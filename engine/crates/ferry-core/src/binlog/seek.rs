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
    /// Offset in that file of the first event to read: just past its header, or past the transactions the replica
    /// has that [`find_start`] read to verify its position.
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
pub fn after_header(path: &Path) -> Result<u64, BinlogError> {
    let mut reader = FileReader::open(path)?;
    for _ in 0..2 {
        reader
            .next_event()
            .unwrap_or_else(|| Err(BinlogError::Invalid(format!("{} has no header", path.display()))))?;
    }
    Ok(reader.offset())
}

/// Finds where to start reading `files` (in index order) for a replica at `position`.
/// `current` is the master's whole binlog state now (to tell "ahead" from "never seen").
pub fn find_start(
    files: &[PathBuf],
    position: &GtidPosition,
    current: &BinlogState,
    strict: bool,
) -> Result<StartPoint, SeekError> {
    assert!(!files.is_empty(), "a binlog always has a file");
    let lists: Vec<BinlogState> =
        files.iter().map(|f| read_gtid_list(f).map(BinlogState::from_gtids)).collect::<Result<_, _>>()?;

    // Newest to oldest, the first file whose GTID list the replica has reached in every domain.
    let reached =
        |list: &BinlogState| list.position().iter().all(|g| position.get(g.domain).is_some_and(|p| p.seq >= g.seq));
    let Some(file_index) = (0..files.len()).rev().find(|&i| reached(&lists[i])) else {
        let oldest = lists[0].position();
        let g = oldest
            .iter()
            .find(|g| position.get(g.domain).is_none_or(|p| p.seq < g.seq))
            .expect("some domain is unreached");
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
    let mut start = StartPoint { file_index, offset, skip_through: pending.clone() };

    // Verify every pending GTID is really there by reading forward until each is found or proven absent. The
    // transactions read on the way that the replica has are passed over by the start point too: the stream begins
    // at the first one it sends (or after the last one read), not at the file's header, so a replica near the end of
    // a long file is not made to wait for a second read of it.
    let mut skipping = true;
    'files: for (i, path) in files.iter().enumerate().skip(file_index) {
        if pending.is_empty() {
            break;
        }
        let begin = if i == file_index { offset } else { MAGIC.len() as u64 };
        for item in TransactionReader::new(FileReader::open_at(path, begin)?) {
            let Item::Transaction(txn) = item? else {
                continue;
            };
            let seen = txn.gtid();
            if skipping {
                let through = start.skip_through.get(&seen.domain).copied();
                if start.admit(seen) {
                    // The stream starts here, with the skip state as it stood: its own `admit` of this transaction
                    // (past a hole, it drops the domain's entry) is still to come.
                    skipping = false;
                    if let Some(through) = through {
                        start.skip_through.insert(seen.domain, through);
                    }
                } else {
                    (start.file_index, start.offset) = (i, txn.end_offset);
                }
            }
            let Some(&wanted) = pending.get(&seen.domain) else {
                continue;
            };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binlog::event::{encode_event, Event, GtidEvent};
    use crate::binlog::files_at;
    use crate::binlog::writer::BinlogWriter;

    /// A binlog built transaction by transaction; `rotate` starts a new file.
    struct TestBinlog {
        _dir: tempfile::TempDir,
        writer: BinlogWriter,
    }

    impl TestBinlog {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let (writer, _) = BinlogWriter::open(&dir.path().join("binlog"), 1, 1 << 30).unwrap();
            TestBinlog { _dir: dir, writer }
        }

        fn write(&mut self, gtids: &str) -> &mut Self {
            for g in gtids.split(',') {
                let gtid: Gtid = g.trim().parse().unwrap();
                let mut buf = Vec::new();
                encode_event(&Event::Gtid(GtidEvent { gtid, commit_id: 1, flags: 0, commit_ts_us: 0 }), &mut buf);
                encode_event(&Event::Rows { changes: vec![] }, &mut buf);
                encode_event(&Event::Commit { changes: 0 }, &mut buf);
                self.writer.append(&buf).unwrap();
                self.writer.record(gtid);
            }
            self.writer.sync().unwrap();
            self
        }

        fn rotate(&mut self) -> &mut Self {
            self.writer.rotate().unwrap();
            self
        }

        fn files(&self) -> Vec<PathBuf> {
            files_at(self.writer.dir()).unwrap()
        }

        /// The GTIDs a replica at `position` would be sent, in order.
        fn stream_from(&self, position: &str, strict: bool) -> Result<Vec<String>, SeekError> {
            let files = self.files();
            let mut start = find_start(&files, &position.parse().unwrap(), self.writer.state(), strict)?;
            let mut out = Vec::new();
            for (i, path) in files.iter().enumerate().skip(start.file_index) {
                let begin = if i == start.file_index { start.offset } else { MAGIC.len() as u64 };
                for item in TransactionReader::new(FileReader::open_at(path, begin).unwrap()) {
                    if let Item::Transaction(t) = item.unwrap() {
                        if start.admit(t.gtid()) {
                            out.push(t.gtid().to_string());
                        }
                    }
                }
            }
            Ok(out)
        }
    }

    fn gtids(list: &str) -> Vec<String> {
        list.split(',').map(|s| s.trim().to_string()).collect()
    }

    #[test]
    fn each_domain_starts_just_after_the_replicas_gtid() {
        let mut b = TestBinlog::new();
        b.write("0-1-1,1-2-1,0-1-2,1-2-2,0-1-3");
        assert_eq!(b.stream_from("0-1-2,1-2-1", true).unwrap(), gtids("1-2-2,0-1-3"));
        assert_eq!(b.stream_from("0-1-3,1-2-2", true).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn a_domain_the_replica_never_saw_starts_at_its_first_event() {
        let mut b = TestBinlog::new();
        b.write("0-1-1,5-1-1,0-1-2,5-1-2");
        assert_eq!(b.stream_from("0-1-1", true).unwrap(), gtids("5-1-1,0-1-2,5-1-2"));
        assert_eq!(b.stream_from("", true).unwrap(), gtids("0-1-1,5-1-1,0-1-2,5-1-2"));
    }

    #[test]
    fn a_domain_only_the_replica_has_is_ignored() {
        // Multi-source: the replica also follows domain 9 from another master.
        let mut b = TestBinlog::new();
        b.write("0-1-1,0-1-2");
        assert_eq!(b.stream_from("0-1-1,9-7-40", true).unwrap(), gtids("0-1-2"));
    }

    /// The GTID of the first transaction at or after the start point.
    fn first_at(files: &[PathBuf], start: &StartPoint) -> Option<String> {
        TransactionReader::new(FileReader::open_at(&files[start.file_index], start.offset).unwrap()).find_map(|item| {
            match item.unwrap() {
                Item::Transaction(t) => Some(t.gtid().to_string()),
                Item::Other(_) => None,
            }
        })
    }

    #[test]
    fn the_start_passes_over_the_transactions_the_replica_has_that_verifying_it_read() {
        let mut b = TestBinlog::new();
        b.write("0-1-1,1-1-1,0-1-2,1-1-2,0-1-3").rotate().write("1-1-3,0-1-4");
        let files = b.files();
        // Both GTIDs are in the first file: the stream begins at the first transaction sent, nothing left to skip.
        let start = find_start(&files, &"0-1-2,1-1-2".parse().unwrap(), b.writer.state(), true).unwrap();
        assert_eq!((start.file_index, first_at(&files, &start).as_deref()), (0, Some("0-1-3")));
        assert!(start.skip_through.is_empty(), "{start:?}");
        assert_eq!(b.stream_from("0-1-2,1-1-2", true).unwrap(), gtids("0-1-3,1-1-3,0-1-4"));
        // Domain 0 needs 0-1-2 before domain 1's GTID goes by: the start stops there, still skipping domain 1.
        let start = find_start(&files, &"0-1-1,1-1-2".parse().unwrap(), b.writer.state(), true).unwrap();
        assert_eq!((start.file_index, first_at(&files, &start).as_deref()), (0, Some("0-1-2")));
        assert_eq!(start.skip_through, BTreeMap::from([(1, "1-1-2".parse().unwrap())]));
        assert_eq!(b.stream_from("0-1-1,1-1-2", true).unwrap(), gtids("0-1-2,0-1-3,1-1-3,0-1-4"));
        // In a later file than the header's: the start is after the replica's last GTID there.
        let start = find_start(&files, &"0-1-3,1-1-3".parse().unwrap(), b.writer.state(), true).unwrap();
        assert_eq!((start.file_index, first_at(&files, &start).as_deref()), (1, Some("0-1-4")));
        assert_eq!(b.stream_from("0-1-3,1-1-3", true).unwrap(), gtids("0-1-4"));
        // A replica with everything starts at the end.
        let start = find_start(&files, &"0-1-4,1-1-3".parse().unwrap(), b.writer.state(), true).unwrap();
        assert_eq!((start.file_index, first_at(&files, &start)), (1, None));
    }

    #[test]
    fn the_newest_file_whose_gtid_list_the_position_reached_is_chosen() {
        let mut b = TestBinlog::new();
        b.write("0-1-1,0-1-2").rotate().write("0-1-3,1-2-1").rotate().write("0-1-4");
        let files = b.files();
        let start = find_start(&files, &"0-1-3,1-2-1".parse().unwrap(), b.writer.state(), true).unwrap();
        assert_eq!(start.file_index, 2, "file 3's list 0-1-3,1-2-1 is reached");
        assert!(start.skip_through.is_empty());
        let start = find_start(&files, &"0-1-2".parse().unwrap(), b.writer.state(), true).unwrap();
        assert_eq!(start.file_index, 1);
        assert_eq!(b.stream_from("0-1-2", true).unwrap(), gtids("0-1-3,1-2-1,0-1-4"));
        // A GTID in a later file than the chosen one is found by reading on.
        assert_eq!(b.stream_from("0-1-4", true).unwrap(), gtids("1-2-1"));
    }

    #[test]
    fn purged_transactions_are_an_error_naming_domain_and_gtids() {
        let mut b = TestBinlog::new();
        b.write("0-1-1,0-1-2").rotate().write("0-1-3");
        let first = b.files()[0].clone();
        let mut remaining = b.writer.file_names().to_vec();
        remaining.remove(0);
        crate::binlog::write_index(b.writer.dir(), &remaining).unwrap();
        std::fs::remove_file(first).unwrap();
        let err = b.stream_from("0-1-1", true).unwrap_err();
        assert!(matches!(err, SeekError::Purged { domain: 0, .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("0-1-1") && text.contains("0-1-2") && text.contains("purged"), "{text}");
        // A replica with nothing in the domain needs the purged start of it too.
        let err = b.stream_from("", true).unwrap_err();
        assert!(err.to_string().contains("nothing in that domain"), "{err}");
    }

    #[test]
    fn a_replica_ahead_of_the_master_is_an_error() {
        let mut b = TestBinlog::new();
        b.write("0-1-1,0-1-2");
        let err = b.stream_from("0-1-5", true).unwrap_err();
        assert!(matches!(err, SeekError::ReplicaAhead { domain: 0, .. }), "{err}");
        assert!(err.to_string().contains("0-1-5") && err.to_string().contains("0-1-2"), "{err}");
    }

    #[test]
    fn a_diverged_replica_is_an_error() {
        let mut b = TestBinlog::new();
        b.write("0-1-1,0-1-2,0-1-3");
        // Same seq_no, another server: the replica has a transaction the master never had.
        let err = b.stream_from("0-9-2", true).unwrap_err();
        assert!(matches!(err, SeekError::Diverged { domain: 0, .. }), "{err}");
        assert!(err.to_string().contains("0-9-2") && err.to_string().contains("0-1-2"), "{err}");
        // Diverged exactly at a file boundary is caught from the GTID list.
        b.rotate();
        let err = b.stream_from("0-9-3", true).unwrap_err();
        assert!(matches!(err, SeekError::Diverged { .. }), "{err}");
    }

    #[test]
    fn landing_on_a_hole_is_an_error_in_strict_mode_only() {
        let mut b = TestBinlog::new();
        b.write("0-1-1,0-1-2,0-1-5,0-1-6");
        let err = b.stream_from("0-1-3", true).unwrap_err();
        assert!(matches!(err, SeekError::Hole { domain: 0, .. }), "{err}");
        assert!(err.to_string().contains("0-1-3") && err.to_string().contains("0-1-5"), "{err}");
        assert_eq!(b.stream_from("0-1-3", false).unwrap(), gtids("0-1-5,0-1-6"));
    }

    #[test]
    fn holes_the_replica_does_not_land_on_are_fine() {
        let mut b = TestBinlog::new();
        b.write("0-1-1,0-1-4,0-1-9");
        assert_eq!(b.stream_from("0-1-4", true).unwrap(), gtids("0-1-9"));
    }

    #[test]
    fn a_legacy_file_and_offset_translates_to_a_gtid_position() {
        let mut b = TestBinlog::new();
        b.write("0-1-1,1-2-1").rotate();
        let after_header = after_header(&b.files()[1]).unwrap();
        b.write("0-1-2");
        let mid = b.writer.coord();
        b.write("1-2-2");
        let files = b.files();
        assert_eq!(position_at(&files[1], after_header).unwrap().to_string(), "0-1-1,1-2-1");
        assert_eq!(position_at(&files[1], mid.offset).unwrap().to_string(), "0-1-2,1-2-1");
        let err = position_at(&files[1], mid.offset + 3).unwrap_err();
        assert!(err.to_string().contains("inside transaction 1-2-2"), "{err}");
    }
}

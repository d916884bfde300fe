//! Rewind on disk: which transactions a rewind to a GTID position cuts (and every reason it cannot), the archive
//! of the cut part (a binlog file `ferry-binlog` reads), the intent record that makes the rewind crash-safe, and
//! the binlog's truncation at the cut.
//!
//! A rewind to position P keeps, per domain, the transactions up to and including P's GTID of that domain, and
//! cuts every later one (a domain P leaves out is cut whole). The cut part must be the binlog's suffix: a kept
//! transaction after a cut one would leave a hole, and is refused naming both.
//!
//! Order on disk (the node drives it, see `node::rewind`): the archive is written and fsynced (as `.partial`),
//! then the intent (`rewind.json` in the binlog directory, naming the archive and the cut), then the archive takes
//! its name, then the store is put back (one redb commit that also records the archive's name), then the binlog is truncated (index first, later files removed,
//! the cut file shortened), then the intent goes. A start that finds the intent completes what is left: each
//! step can be done again.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::binlog::event::{encode_event, flags, Event, FormatDescription, BINLOG_FORMAT_VERSION};
use crate::binlog::intent;
use crate::binlog::reader::{read_gtid_list_on, FileReader, Item, Transaction, TransactionReader};
use crate::binlog::writer::now_us;
use crate::binlog::{file_name, file_seq, read_index_on, sync_dir, write_index_on, BinlogCoord, BinlogError, MAGIC};
use crate::fault::{self, sites};
use crate::gtid::{BinlogState, DomainId, Gtid, GtidPosition, ServerId};
use crate::row::{Row, RowChange};
use crate::vfs::Fs;

/// The intent file's name, in the binlog directory.
pub const REWIND_INTENT_FILE: &str = "rewind.json";
/// The directory (in the data directory) archives of cut transactions are kept in.
pub const ARCHIVE_DIR: &str = "rewind-archives";

/// One transaction a rewind cuts, as the API lists it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CutTransaction {
    pub gtid: String,
    pub file: String,
    pub offset: u64,
    pub commit_ts_us: u64,
    /// Tables it changed, in the order it first changed each.
    pub tables: Vec<String>,
    pub rows: u32,
}

/// Why a rewind is refused; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewindRefusal {
    #[error(
        "the position is ahead of this node in domain {domain}: it asks for {wanted}, this node's binlog has {}",
        have.map_or("nothing in that domain".to_string(), |g| format!("{g} there"))
    )]
    Ahead { domain: DomainId, wanted: Gtid, have: Option<Gtid> },
    #[error(
        "GTID {wanted} (domain {domain}) is not in this node's binlog (its newest there is {}): the node's history \
         diverged from the position's before it, so no cut of its binlog reaches it",
        have.map_or("none".to_string(), |g| g.to_string())
    )]
    NotInBinlog { domain: DomainId, wanted: Gtid, have: Option<Gtid> },
    #[error(
        "GTID {wanted} (domain {domain}) is older than this node's oldest binlog file {file}, which starts at {first}: \
         the transactions to cut were purged, so the store cannot be put back"
    )]
    Purged { domain: DomainId, wanted: Gtid, first: Gtid, file: String },
    #[error(
        "the position leaves out domain {domain}, which this node's oldest binlog file {file} already starts at \
         {first}: cutting the whole domain needs transactions that were purged"
    )]
    DomainPurged { domain: DomainId, first: Gtid, file: String },
    #[error(
        "the transactions to cut are not the end of this node's binlog: {kept} is kept but follows {cut}, which \
         would be cut (domains interleave there); rewind to a position that keeps {cut}, or rebuild the node"
    )]
    NotASuffix { kept: Gtid, cut: Gtid },
    #[error(
        "{gtid} would be cut but was logged without before images (binlog_row_image minimal, flag 0x10 unset), so \
         the rows it changed cannot be put back from the binlog's images, nor by replaying the kept binlog into an \
         empty store: {why_not_replay}; rebuild the node from a donor instead"
    )]
    NoBeforeImages { gtid: Gtid, why_not_replay: String },
}

/// What a rewind to a position would cut, found by reading the binlog.
#[derive(Debug, Clone)]
pub struct RewindPlan {
    /// The transactions cut, in binlog order.
    pub cut: Vec<Transaction>,
    /// Where the binlog ends after the rewind: the first cut transaction's start (None when nothing is cut).
    pub cut_at: Option<BinlogCoord>,
    /// The binlog state at the cut (the archive's GTID list, the node's gtid_binlog_state after the rewind).
    pub state_at_cut: BinlogState,
    /// Tables the kept transactions of the binlog change: a table only the cut part changed goes when the
    /// rewind leaves it empty (a server that never had the cut part has no such table).
    pub kept_tables: BTreeSet<String>,
    /// The binlog starts at its beginning: file 1, with an empty GTID list.
    pub starts_whole: bool,
}

impl RewindPlan {
    pub fn listed(&self) -> Vec<CutTransaction> {
        self.cut.iter().map(listed).collect()
    }

    /// The GTIDs cut, in binlog order.
    pub fn gtids(&self) -> Vec<Gtid> {
        self.cut.iter().map(Transaction::gtid).collect()
    }

    /// Tables only the cut transactions change: dropped by the rewind when they are left empty.
    pub fn cut_only_tables(&self) -> Vec<String> {
        let cut: BTreeSet<&String> = self.cut.iter().flat_map(|t| t.changes.iter().map(|c| &c.table)).collect();
        cut.into_iter().filter(|t| !self.kept_tables.contains(*t)).cloned().collect()
    }

    /// The first cut transaction logged without before images, if any: its rows cannot be put back from images.
    pub fn without_before_images(&self) -> Option<Gtid> {
        self.cut.iter().find(|t| t.header.flags & flags::BEFORE_IMAGES == 0).map(Transaction::gtid)
    }
}

fn listed(t: &Transaction) -> CutTransaction {
    let mut tables: Vec<String> = Vec::new();
    for c in &t.changes {
        if !tables.contains(&c.table) {
            tables.push(c.table.clone());
        }
    }
    CutTransaction {
        gtid: t.gtid().to_string(),
        file: t.file.clone(),
        offset: t.offset,
        commit_ts_us: t.header.commit_ts_us,
        tables,
        rows: t.changes.len() as u32,
    }
}

/// Reads the binlog `files` of `dir` (written through `end`) and finds what a rewind to `to` cuts.
pub fn plan(
    fs: &dyn Fs,
    dir: &Path,
    files: &[String],
    end: BinlogCoord,
    to: &GtidPosition,
) -> Result<Result<RewindPlan, RewindRefusal>, BinlogError> {
    let first_file = files.first().cloned().unwrap_or_default();
    let initial = BinlogState::from_gtids(read_gtid_list_on(fs, &dir.join(&first_file))?);
    let starts_whole = file_seq(&first_file) == Some(1) && initial.is_empty();
    let mut reached: BTreeSet<DomainId> = BTreeSet::new();
    for wanted in to.iter() {
        match initial.position().get(wanted.domain) {
            Some(first) if first == wanted => {
                reached.insert(wanted.domain);
            }
            Some(first) if first.seq > wanted.seq => {
                return Ok(Err(RewindRefusal::Purged { domain: wanted.domain, wanted, first, file: first_file }));
            }
            _ => {}
        }
    }
    if let Some(first) = initial.position().iter().find(|g| to.get(g.domain).is_none()) {
        return Ok(Err(RewindRefusal::DomainPurged { domain: first.domain, first, file: first_file }));
    }
    let mut state = initial;
    let mut cut: Vec<Transaction> = Vec::new();
    let mut kept_after_cut: Option<(Gtid, Gtid)> = None;
    let mut newest = state.position().clone();
    let mut kept_tables = BTreeSet::new();
    for name in files {
        let seq = file_seq(name).expect("index holds binlog names");
        let path = dir.join(name);
        let mut reader = TransactionReader::new(FileReader::open_at_on(fs, &path, MAGIC.len() as u64)?);
        while let Some(item) = reader.next_item() {
            let Item::Transaction(txn) = item? else {
                continue;
            };
            if (BinlogCoord { file_seq: seq, offset: txn.end_offset }) > end {
                break;
            }
            let gtid = txn.gtid();
            newest.set(gtid);
            let kept = to.get(gtid.domain).is_some() && !reached.contains(&gtid.domain);
            if kept {
                if to.get(gtid.domain) == Some(gtid) {
                    reached.insert(gtid.domain);
                }
                if let (Some(first_cut), None) = (cut.first(), kept_after_cut) {
                    kept_after_cut = Some((gtid, first_cut.gtid()));
                }
                state.record(gtid);
                kept_tables.extend(txn.changes.iter().map(|c| c.table.clone()));
            } else {
                cut.push(txn);
            }
        }
    }
    if let Some(wanted) = to.iter().find(|g| !reached.contains(&g.domain)) {
        let have = newest.get(wanted.domain);
        return Ok(Err(if have.is_none_or(|h| h.seq < wanted.seq) {
            RewindRefusal::Ahead { domain: wanted.domain, wanted, have }
        } else {
            RewindRefusal::NotInBinlog { domain: wanted.domain, wanted, have }
        }));
    }
    if let Some((kept, cut)) = kept_after_cut {
        return Ok(Err(RewindRefusal::NotASuffix { kept, cut }));
    }
    let cut_at = cut
        .first()
        .map(|t| BinlogCoord { file_seq: file_seq(&t.file).expect("read from a binlog file"), offset: t.offset });
    Ok(Ok(RewindPlan { cut, cut_at, state_at_cut: state, kept_tables, starts_whole }))
}

/// The rows to write back, oldest before image last applied: per row, its image before the first cut
/// transaction that changed it (None: the row was absent).
pub fn restores(cut: &[Vec<RowChange>]) -> Vec<(String, String, Option<Row>)> {
    let mut out: std::collections::BTreeMap<(String, String), Option<Row>> = std::collections::BTreeMap::new();
    for changes in cut.iter().rev() {
        for c in changes.iter().rev() {
            out.insert((c.table.clone(), c.key.clone()), c.before.clone());
        }
    }
    out.into_iter().map(|((table, key), row)| (table, key, row)).collect()
}

/// The row changes of the binlog's transactions from its first file to `cut_at` (excluded), in order, read as
/// they are needed.
pub fn kept_changes(
    fs: std::sync::Arc<dyn Fs>,
    dir: &Path,
    cut_at: BinlogCoord,
) -> Result<impl Iterator<Item = Result<Vec<RowChange>, String>>, BinlogError> {
    let files: Vec<String> =
        read_index_on(&*fs, dir)?.into_iter().filter(|f| file_seq(f).is_some_and(|s| s <= cut_at.file_seq)).collect();
    let dir = dir.to_path_buf();
    let mut files = files.into_iter();
    let mut current: Option<(u64, TransactionReader)> = None;
    let mut done = false;
    Ok(std::iter::from_fn(move || loop {
        if done {
            return None;
        }
        let (seq, reader) = match &mut current {
            Some(open) => open,
            None => {
                let name = files.next()?;
                let seq = file_seq(&name).expect("index holds binlog names");
                match FileReader::open_at_on(&*fs, &dir.join(&name), MAGIC.len() as u64) {
                    Ok(r) => current.insert((seq, TransactionReader::new(r))),
                    Err(e) => return Some(Err(e.to_string())),
                }
            }
        };
        match reader.next_item() {
            None => current = None,
            Some(Err(e)) => return Some(Err(e.to_string())),
            Some(Ok(Item::Other(_))) => {}
            Some(Ok(Item::Transaction(t))) => {
                if (BinlogCoord { file_seq: *seq, offset: t.offset }) >= cut_at {
                    done = true;
                    return None;
                }
                return Some(Ok(t.changes));
            }
        }
    }))
}

/// The name of a new archive: the cut's start, and the time (so two rewinds never share one).
pub fn archive_name(cut_at: BinlogCoord) -> String {
    format!("rewind-{}-{}-{}.bin", file_name(cut_at.file_seq), cut_at.offset, now_us())
}

/// Whether `name` is an archive's name (what the download accepts: no path, no other file).
pub fn is_archive_name(name: &str) -> bool {
    name.starts_with("rewind-")
        && name.ends_with(".bin")
        && name.len() <= 128
        && !name.ends_with(PARTIAL)
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

/// Writes the archive of `plan` durably, as `data_dir/rewind-archives/<name>.partial`: a binlog file (magic,
/// format description, GTID list = the state at the cut) followed by the cut transactions' events exactly as the
/// binlog holds them. It takes its name once the intent naming it is durable ([`promote_archive`]); a partial
/// archive no intent names is a rewind that never began, removed at the next start ([`discard_partial_archives`]).
pub fn write_archive(
    fs: &dyn Fs,
    data_dir: &Path,
    binlog_dir: &Path,
    name: &str,
    server_id: ServerId,
    plan: &RewindPlan,
) -> Result<(), BinlogError> {
    let dir = data_dir.join(ARCHIVE_DIR);
    fs.create_dir_all(&dir).map_err(|e| BinlogError::io(&dir, e))?;
    let partial = dir.join(format!("{name}{PARTIAL}"));
    let mut header = MAGIC.to_vec();
    encode_event(
        &Event::FormatDescription(FormatDescription {
            binlog_version: BINLOG_FORMAT_VERSION,
            server_id,
            created_at_us: now_us(),
            server_version: concat!("ferryd ", env!("CARGO_PKG_VERSION"), " rewind archive").to_string(),
        }),
        &mut header,
    );
    encode_event(&Event::GtidList { gtids: plan.state_at_cut.gtids() }, &mut header);
    let mut f = fs.create(&partial).map_err(|e| BinlogError::io(&partial, e))?;
    fault::write_all(&mut f, &header, sites::REWIND_ARCHIVE).map_err(|e| BinlogError::io(&partial, e))?;
    let mut current: Option<(String, Vec<u8>)> = None;
    for t in &plan.cut {
        if current.as_ref().is_none_or(|(file, _)| *file != t.file) {
            let source = binlog_dir.join(&t.file);
            current = Some((t.file.clone(), fs.read(&source).map_err(|e| BinlogError::io(&source, e))?));
        }
        let bytes = &current.as_ref().expect("read above").1;
        let range = t.offset as usize..t.end_offset as usize;
        let Some(events) = bytes.get(range) else {
            return Err(BinlogError::Invalid(format!("{} ends before {} ({})", t.file, t.end_offset, t.gtid())));
        };
        fault::write_all(&mut f, events, sites::REWIND_ARCHIVE).map_err(|e| BinlogError::io(&partial, e))?;
    }
    f.sync_all().map_err(|e| BinlogError::io(&partial, e))?;
    drop(f);
    sync_dir(fs, &dir)
}

/// The suffix of an archive whose rewind's intent may not be durable yet.
const PARTIAL: &str = ".partial";

/// Gives the archive `name` its name (idempotent: done once the intent naming it is durable). Returns its path.
pub fn promote_archive(fs: &dyn Fs, data_dir: &Path, name: &str) -> Result<PathBuf, BinlogError> {
    let dir = data_dir.join(ARCHIVE_DIR);
    let path = dir.join(name);
    let partial = dir.join(format!("{name}{PARTIAL}"));
    if fs.exists(&partial) {
        fs.rename(&partial, &path).map_err(|e| BinlogError::io(&path, e))?;
        sync_dir(fs, &dir)?;
    }
    Ok(path)
}

/// Removes the partial archives of rewinds that never began (no intent names them); call it with no intent.
pub fn discard_partial_archives(fs: &dyn Fs, data_dir: &Path) -> Result<(), BinlogError> {
    let dir = data_dir.join(ARCHIVE_DIR);
    let names = match fs.list_dir(&dir) {
        Ok(names) => names,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(BinlogError::io(&dir, e)),
    };
    let partial: Vec<String> = names.into_iter().filter(|n| n.ends_with(PARTIAL)).collect();
    for name in &partial {
        let path = dir.join(name);
        fs.remove_file(&path).map_err(|e| BinlogError::io(&path, e))?;
        tracing::info!(file = %name, "removed the partial archive of a rewind that never began");
    }
    if !partial.is_empty() {
        sync_dir(fs, &dir)?;
    }
    Ok(())
}

/// Reads an archive back: its GTID list and its transactions, every checksum checked.
pub fn read_archive(fs: &dyn Fs, path: &Path) -> Result<(Vec<Gtid>, Vec<Transaction>), BinlogError> {
    let list = read_gtid_list_on(fs, path)?;
    let mut txns = Vec::new();
    for item in TransactionReader::new(FileReader::open_at_on(fs, path, MAGIC.len() as u64)?) {
        if let Item::Transaction(t) = item? {
            txns.push(t);
        }
    }
    Ok((list, txns))
}

/// A rewind in progress, recorded before anything but its archive is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindIntent {
    /// The archive's file name (in [`ARCHIVE_DIR`]); the store records it once it was put back.
    pub archive: String,
    /// The position rewound to.
    pub to: String,
    /// Where the binlog is cut.
    pub cut_at: BinlogCoord,
    /// gtid_slave_pos after the rewind.
    pub slave_pos: String,
    /// Tables only the cut part changed: dropped when the rewind leaves them empty.
    #[serde(default)]
    pub drop_if_empty: Vec<String>,
    /// The store is put back by replaying the kept binlog into it emptied (a cut transaction has no before
    /// images), not from the cut transactions' before images.
    #[serde(default)]
    pub replay: bool,
}

fn intent_path(dir: &Path) -> PathBuf {
    dir.join(REWIND_INTENT_FILE)
}

/// Records the intent durably in the binlog directory `dir`.
pub fn write_intent(fs: &dyn Fs, dir: &Path, intent: &RewindIntent) -> Result<(), BinlogError> {
    intent::write(fs, dir, &intent_path(dir), intent, Some(sites::REWIND_INTENT))
}

/// The rewind a crash interrupted, if any.
pub fn read_intent(fs: &dyn Fs, dir: &Path) -> Result<Option<RewindIntent>, BinlogError> {
    intent::read(fs, &intent_path(dir), "rewind")
}

/// The rewind is complete: forgets the intent.
pub fn clear_intent(fs: &dyn Fs, dir: &Path) -> Result<(), BinlogError> {
    intent::clear(fs, dir, &intent_path(dir))
}

/// Cuts the binlog of `dir` at `at` (idempotent): the index loses the later files, they are deleted, and the file
/// holding `at` is shortened to it.
pub fn truncate(fs: &dyn Fs, dir: &Path, at: BinlogCoord) -> Result<(), BinlogError> {
    let files = read_index_on(fs, dir)?;
    let kept: Vec<String> = files.iter().filter(|f| file_seq(f).is_some_and(|s| s <= at.file_seq)).cloned().collect();
    if kept.last().map(String::as_str) != Some(file_name(at.file_seq).as_str()) {
        return Err(BinlogError::Invalid(format!("cannot cut the binlog at {at}: its index does not list that file")));
    }
    if kept.len() != files.len() {
        write_index_on(fs, dir, &kept)?;
    }
    let mut later: Vec<String> = fs
        .list_dir(dir)
        .map_err(|e| BinlogError::io(dir, e))?
        .into_iter()
        .filter(|n| file_seq(n).is_some_and(|s| s > at.file_seq))
        .collect();
    later.sort();
    for name in &later {
        let path = dir.join(name);
        fs.remove_file(&path).map_err(|e| BinlogError::io(&path, e))?;
    }
    if !later.is_empty() {
        sync_dir(fs, dir)?;
    }
    let path = dir.join(file_name(at.file_seq));
    let mut f = fs.open_write(&path).map_err(|e| BinlogError::io(&path, e))?;
    if f.len().map_err(|e| BinlogError::io(&path, e))? > at.offset {
        fault::check(sites::REWIND_TRUNCATE)
            .and_then(|_| f.set_len(at.offset))
            .and_then(|_| f.sync_all())
            .map_err(|e| BinlogError::io(&path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_names_are_checked_before_any_path_is_built() {
        let name = archive_name(BinlogCoord { file_seq: 3, offset: 812 });
        assert!(is_archive_name(&name), "{name}");
        for bad in ["../store.redb", "rewind-../../x.bin", "rewind-a/b.bin", "store.redb", "rewind-x.bin.tmp"] {
            assert!(!is_archive_name(bad), "{bad}");
        }
    }

    #[test]
    fn restores_take_each_rows_image_before_the_first_cut_change() {
        let row = |n: i64| -> Row { [("n".to_string(), crate::row::Value::Int(n))].into() };
        let change = |key: &str, before: Option<i64>, after: Option<i64>| RowChange {
            table: "t".into(),
            key: key.into(),
            before: before.map(row),
            after: after.map(row),
        };
        let cut = vec![
            vec![change("a", Some(1), Some(2)), change("b", None, Some(5))],
            vec![change("a", Some(2), Some(3)), change("c", Some(9), None)],
        ];
        assert_eq!(
            restores(&cut),
            vec![
                ("t".into(), "a".into(), Some(row(1))),
                ("t".into(), "b".into(), None),
                ("t".into(), "c".into(), Some(row(9))),
            ]
        );
    }

    #[test]
    fn the_intent_round_trips_and_clears() {
        let dir = tempfile::tempdir().unwrap();
        let fs = crate::vfs::RealFs;
        assert_eq!(read_intent(&fs, dir.path()).unwrap(), None);
        let intent = RewindIntent {
            archive: "rewind-x.bin".into(),
            to: "0-1-4".into(),
            cut_at: BinlogCoord { file_seq: 1, offset: 300 },
            slave_pos: String::new(),
            drop_if_empty: vec!["t".into()],
            replay: true,
        };
        write_intent(&fs, dir.path(), &intent).unwrap();
        assert_eq!(read_intent(&fs, dir.path()).unwrap(), Some(intent));
        clear_intent(&fs, dir.path()).unwrap();
        clear_intent(&fs, dir.path()).unwrap();
        assert_eq!(read_intent(&fs, dir.path()).unwrap(), None);
    }
}

//! Appending to the binlog: one write and (at most) one fsync per commit group, rotation, purge, and the
//! tail recovery done when a binlog directory is opened after a crash.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::binlog::event::{decode_event, encode_event, Checkpoint, Event, FormatDescription, BINLOG_FORMAT_VERSION};
use crate::binlog::reader::{read_gtid_list_on, FileReader, Item, TransactionReader};
use crate::binlog::{file_name, file_seq, read_index_on, sync_dir, write_index_on, BinlogCoord, BinlogError, MAGIC};
use crate::fault::{self, sites};
use crate::gtid::{BinlogState, Gtid, ServerId};
use crate::vfs::{self, Fs, FsFile};

/// Microseconds since the Unix epoch.
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// What opening a binlog directory found and repaired.
#[derive(Debug, Default, Clone)]
pub struct TailRecovery {
    /// Bytes cut from the end of the last file (0 when it ended cleanly).
    pub bytes_cut: u64,
    /// Offset the last file was truncated to.
    pub truncated_at: Option<BinlogCoord>,
    /// Why the tail was cut (the read error), when it was.
    pub reason: Option<String>,
    /// GTID of the incomplete transaction that was cut, when its GTID event was readable.
    pub incomplete_gtid: Option<Gtid>,
    /// Every readable GTID in the bytes that were cut: the seq_no high-water mark is raised to them before the
    /// cut, so they are never handed out again.
    pub cut_gtids: Vec<Gtid>,
    /// Files found on disk after the index's last one (a rotation cut short) and removed.
    pub orphans_removed: Vec<String>,
}

/// Size and name of one binlog file.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, serde::Serialize)]
pub struct BinlogFileInfo {
    pub name: String,
    pub size: u64,
}

/// Appends events to the current binlog file.
pub struct BinlogWriter {
    /// The file layer every file of this binlog is read and written through.
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    server_id: ServerId,
    /// Rotate once the current file reaches this size.
    max_file_bytes: u64,
    /// Files in index order; the last is being written.
    files: Vec<String>,
    file: Box<dyn FsFile>,
    /// Sequence number of the current file.
    file_seq: u64,
    /// End of what has been written to the current file.
    offset: u64,
    /// End of what has been fsynced in the current file.
    synced_offset: u64,
    /// Last GTID per (domain, server) written so far: becomes the next file's GTID list.
    state: BinlogState,
}

impl BinlogWriter {
    /// Opens (or creates) the binlog in `dir`, cutting a torn or corrupt tail of the last file back to its last
    /// whole transaction. Corruption in any other place is an error: those bytes were acknowledged and are kept.
    pub fn open(dir: &Path, server_id: ServerId, max_file_bytes: u64) -> Result<(Self, TailRecovery), BinlogError> {
        Self::open_keeping(dir, server_id, max_file_bytes, None)
    }

    /// Like [`BinlogWriter::open`], but refuses (touching nothing) to cut the tail below `keep_through`: bytes the
    /// store is already durable through were acknowledged, so damage there is reported, never repaired by cutting.
    pub fn open_keeping(
        dir: &Path,
        server_id: ServerId,
        max_file_bytes: u64,
        keep_through: Option<BinlogCoord>,
    ) -> Result<(Self, TailRecovery), BinlogError> {
        Self::open_keeping_on(vfs::real(), dir, server_id, max_file_bytes, keep_through, false)
    }

    /// [`BinlogWriter::open_keeping`] on the file layer `fs`. With `unsynced_tail` (the binlog is written
    /// without an fsync per commit group: durability `none` or `network`), nothing past `keep_through` was
    /// fsynced, and a power loss can leave any part of it on disk, in any order (the page cache writes pages
    /// back as it likes): damage there is a crash's, and is cut like a torn tail, whatever follows it.
    pub fn open_keeping_on(
        fs: Arc<dyn Fs>,
        dir: &Path,
        server_id: ServerId,
        max_file_bytes: u64,
        keep_through: Option<BinlogCoord>,
        unsynced_tail: bool,
    ) -> Result<(Self, TailRecovery), BinlogError> {
        fs.create_dir_all(dir).map_err(|e| BinlogError::io(dir, e))?;
        let mut files = read_index_on(&*fs, dir)?;
        let mut recovery =
            TailRecovery { orphans_removed: remove_orphans(&*fs, dir, &files)?, ..TailRecovery::default() };
        let Some(last) = files.last().cloned() else {
            let writer = Self::create_first(fs, dir, server_id, max_file_bytes)?;
            return Ok((writer, recovery));
        };
        let seq =
            file_seq(&last).ok_or_else(|| BinlogError::Invalid(format!("index names {last:?}, not a binlog file")))?;
        let path = dir.join(&last);
        if !fs.exists(&path) {
            return Err(BinlogError::Missing { file: last, problem: "does not exist".into() });
        }
        let (state, good_end, rotated_to) = scan_tail(&*fs, &path, &mut recovery, seq, unsynced_tail)?;
        let end = BinlogCoord { file_seq: seq, offset: good_end };
        if let Some(keep) = keep_through.filter(|k| *k > end) {
            return Err(BinlogError::Invalid(format!(
                "binlog {last} is damaged at offset {good_end} ({}), but the store is durable through {keep}: \
                 those transactions were acknowledged, so the file is left as it is; restore the binlog from a backup",
                recovery.reason.as_deref().unwrap_or("it ends early")
            )));
        }
        let mut file = fs.open_write(&path).map_err(|e| BinlogError::io(&path, e))?;
        let len = file.len().map_err(|e| BinlogError::io(&path, e))?;
        if good_end < len {
            // Whatever a client or a replica may have seen of the cut transactions, their seq_nos stay used.
            // Only this server's own seq_nos: a replicated transaction is fetched again from its master, whose GTID
            // strict mode must then accept.
            super::hwm::raise_on(&*fs, dir, recovery.cut_gtids.iter().copied().filter(|g| g.server == server_id))?;
            recovery.bytes_cut = len - good_end;
            recovery.truncated_at = Some(BinlogCoord { file_seq: seq, offset: good_end });
            file.set_len(good_end).and_then(|_| file.sync_all()).map_err(|e| BinlogError::io(&path, e))?;
            tracing::warn!(
                file = %last, offset = good_end, bytes_cut = recovery.bytes_cut,
                incomplete_gtid = ?recovery.incomplete_gtid.map(|g| g.to_string()),
                reason = recovery.reason.as_deref().unwrap_or(""),
                cut_gtids = ?recovery.cut_gtids.iter().map(|g| g.to_string()).collect::<Vec<_>>(),
                "binlog tail was torn (an incomplete or unchecksummed last write): truncated to the last whole \
                 transaction"
            );
        }
        let mut writer = BinlogWriter {
            fs,
            dir: dir.to_path_buf(),
            server_id,
            max_file_bytes,
            files: std::mem::take(&mut files),
            file,
            file_seq: seq,
            offset: good_end,
            synced_offset: good_end,
            state,
        };
        writer.seek_end()?;
        if rotated_to.is_some() {
            // The file was closed by a rotation whose next file never made it into the index.
            writer.open_next_file()?;
        }
        Ok((writer, recovery))
    }

    /// RESET MASTER: deletes every binlog file (the index first) and starts again with file `first_seq`, whose
    /// GTID list is empty. Returns the names deleted.
    pub fn reset(&mut self, first_seq: u64) -> Result<Vec<String>, BinlogError> {
        let removed = super::reset::delete_all_files(&*self.fs, &self.dir)?;
        *self = Self::create_numbered(
            self.fs.clone(),
            &self.dir,
            self.server_id,
            self.max_file_bytes,
            first_seq,
            BinlogState::new(),
        )?;
        Ok(removed)
    }

    /// Completes a RESET MASTER a crash interrupted (see [`super::reset`]): every file deleted, file `first_seq`
    /// started. Returns the new binlog's end.
    pub fn start_fresh(
        fs: Arc<dyn Fs>,
        dir: &Path,
        server_id: ServerId,
        max_file_bytes: u64,
        first_seq: u64,
    ) -> Result<BinlogCoord, BinlogError> {
        super::reset::delete_all_files(&*fs, dir)?;
        Ok(Self::create_numbered(fs, dir, server_id, max_file_bytes, first_seq, BinlogState::new())?.coord())
    }

    /// A clone's binlog: every file deleted, file `first_seq` started with `state` as its GTID list (the clone's
    /// position), so the binlog is empty and its GTID state is the position. Done again after a crash, it ends the
    /// same (the header's length depends on the state only).
    pub fn start_fresh_with_state(
        fs: Arc<dyn Fs>,
        dir: &Path,
        server_id: ServerId,
        max_file_bytes: u64,
        first_seq: u64,
        state: BinlogState,
    ) -> Result<Self, BinlogError> {
        fs.create_dir_all(dir).map_err(|e| BinlogError::io(dir, e))?;
        super::reset::delete_all_files(&*fs, dir)?;
        Self::create_numbered(fs, dir, server_id, max_file_bytes, first_seq, state)
    }

    fn create_first(
        fs: Arc<dyn Fs>,
        dir: &Path,
        server_id: ServerId,
        max_file_bytes: u64,
    ) -> Result<Self, BinlogError> {
        Self::create_numbered(fs, dir, server_id, max_file_bytes, 1, BinlogState::new())
    }

    /// File `seq` created with `state` as its GTID list (its header written and fsynced), the binlog's only file.
    fn create_numbered(
        fs: Arc<dyn Fs>,
        dir: &Path,
        server_id: ServerId,
        max_file_bytes: u64,
        seq: u64,
        state: BinlogState,
    ) -> Result<Self, BinlogError> {
        let name = file_name(seq);
        let path = dir.join(&name);
        let file = fs.create(&path).map_err(|e| BinlogError::io(&path, e))?;
        let mut writer = BinlogWriter {
            fs,
            dir: dir.to_path_buf(),
            server_id,
            max_file_bytes,
            files: vec![],
            file,
            file_seq: seq,
            offset: 0,
            synced_offset: 0,
            state,
        };
        writer.write_header(name)?;
        Ok(writer)
    }

    fn seek_end(&mut self) -> Result<(), BinlogError> {
        use std::io::Seek;
        let path = self.current_path();
        self.file.seek(std::io::SeekFrom::Start(self.offset)).map_err(|e| BinlogError::io(path, e))?;
        Ok(())
    }

    /// Writes magic, format description and GTID list to the (empty) current file, fsyncs it, then lists it in the index.
    fn write_header(&mut self, name: String) -> Result<(), BinlogError> {
        let mut buf = MAGIC.to_vec();
        encode_event(
            &Event::FormatDescription(FormatDescription {
                binlog_version: BINLOG_FORMAT_VERSION,
                server_id: self.server_id,
                created_at_us: now_us(),
                server_version: concat!("ferryd ", env!("CARGO_PKG_VERSION")).to_string(),
            }),
            &mut buf,
        );
        encode_event(&Event::GtidList { gtids: self.state.gtids() }, &mut buf);
        let path = self.dir.join(&name);
        fault::write_all(&mut self.file, &buf, sites::BINLOG_HEADER)
            .and_then(|_| self.file.sync_all())
            .map_err(|e| BinlogError::io(&path, e))?;
        self.offset = buf.len() as u64;
        self.synced_offset = self.offset;
        self.files.push(name);
        write_index_on(&*self.fs, &self.dir, &self.files)?;
        sync_dir(&*self.fs, &self.dir)
    }

    fn current_path(&self) -> PathBuf {
        self.dir.join(file_name(self.file_seq))
    }

    /// Appends already-encoded events (a whole commit group) with one write.
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), BinlogError> {
        let path = self.current_path();
        fault::write_all(&mut self.file, bytes, sites::BINLOG_WRITE).map_err(|e| BinlogError::io(path, e))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Records that a transaction with this GTID is now in the binlog.
    pub fn record(&mut self, gtid: Gtid) {
        self.state.record(gtid);
    }

    /// fsyncs what was appended since the last sync; returns how long the fsync took (None if nothing to sync).
    pub fn sync(&mut self) -> Result<Option<Duration>, BinlogError> {
        if self.synced_offset == self.offset {
            return Ok(None);
        }
        let started = Instant::now();
        fault::check(sites::BINLOG_FSYNC)
            .and_then(|_| self.file.sync_data())
            .map_err(|e| BinlogError::io(self.current_path(), e))?;
        self.synced_offset = self.offset;
        Ok(Some(started.elapsed()))
    }

    /// Appends a checkpoint event saying the store is durable through `through`.
    pub fn write_checkpoint(&mut self, through: BinlogCoord) -> Result<(), BinlogError> {
        let mut buf = Vec::new();
        encode_event(
            &Event::Checkpoint(Checkpoint { file: file_name(through.file_seq), offset: through.offset }),
            &mut buf,
        );
        self.append(&buf)
    }

    pub fn needs_rotation(&self) -> bool {
        self.offset >= self.max_file_bytes
    }

    /// Forgets a domain: the next file's GTID list leaves it out (FLUSH BINARY LOGS DELETE_DOMAIN_ID; the caller
    /// has checked that no file still present holds it, and rotates next).
    pub fn forget_domain(&mut self, domain: crate::gtid::DomainId) {
        self.state.remove_domain(domain);
    }

    /// Closes the current file with a rotate event and opens the next one (its GTID list = current state).
    pub fn rotate(&mut self) -> Result<(), BinlogError> {
        let mut buf = Vec::new();
        encode_event(&Event::Rotate { next_file: file_name(self.file_seq + 1) }, &mut buf);
        self.append(&buf)?;
        self.sync()?;
        self.open_next_file()
    }

    fn open_next_file(&mut self) -> Result<(), BinlogError> {
        self.file_seq += 1;
        let name = file_name(self.file_seq);
        let path = self.dir.join(&name);
        self.file = self.fs.create(&path).map_err(|e| BinlogError::io(&path, e))?;
        self.write_header(name)
    }

    /// Deletes the files before `before` (which must be listed), never the current file nor any at or after
    /// `keep_from` (still needed by crash recovery). Returns the names removed.
    pub fn purge_before(&mut self, before: &str, keep_from: u64) -> Result<Vec<String>, BinlogError> {
        let Some(at) = self.files.iter().position(|f| f == before) else {
            return Err(BinlogError::Invalid(format!(
                "{before:?} is not a binlog file of this node (see the status's binlog files)"
            )));
        };
        let limit =
            self.files.iter().position(|f| file_seq(f).is_some_and(|s| s >= keep_from)).unwrap_or(self.files.len() - 1);
        if at > limit {
            return Err(BinlogError::Invalid(format!(
                "cannot purge up to {before}: {} is still needed for crash recovery",
                self.files[limit]
            )));
        }
        let removed: Vec<String> = self.files.drain(..at).collect();
        write_index_on(&*self.fs, &self.dir, &self.files)?;
        for name in &removed {
            let path = self.dir.join(name);
            self.fs.remove_file(&path).map_err(|e| BinlogError::io(&path, e))?;
        }
        sync_dir(&*self.fs, &self.dir)?;
        Ok(removed)
    }

    pub fn coord(&self) -> BinlogCoord {
        BinlogCoord { file_seq: self.file_seq, offset: self.offset }
    }

    pub fn state(&self) -> &BinlogState {
        &self.state
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file layer this binlog is on.
    pub fn fs(&self) -> &Arc<dyn Fs> {
        &self.fs
    }

    pub fn file_names(&self) -> &[String] {
        &self.files
    }

    pub fn files(&self) -> Vec<BinlogFileInfo> {
        self.files
            .iter()
            .map(|name| BinlogFileInfo {
                name: name.clone(),
                size: self.fs.file_len(&self.dir.join(name)).unwrap_or(0),
            })
            .collect()
    }
}

/// Removes binlog files newer than the index's last: left by a rotation that crashed before updating the index.
fn remove_orphans(fs: &dyn Fs, dir: &Path, files: &[String]) -> Result<Vec<String>, BinlogError> {
    let newest = files.last().and_then(|f| file_seq(f)).unwrap_or(0);
    let mut removed = Vec::new();
    for name in fs.list_dir(dir).map_err(|e| BinlogError::io(dir, e))? {
        if file_seq(&name).is_some_and(|s| s > newest) {
            let path = dir.join(&name);
            fs.remove_file(&path).map_err(|e| BinlogError::io(&path, e))?;
            tracing::warn!(file = %name, "removed a binlog file that a rotation left out of the index");
            removed.push(name);
        }
    }
    Ok(removed)
}

/// Reads the last file to its end: rebuilds the binlog state and finds the end of its last whole item.
/// Returns (state, offset to keep, next file named by a closing rotate event).
fn scan_tail(
    fs: &dyn Fs,
    path: &Path,
    recovery: &mut TailRecovery,
    seq: u64,
    unsynced_tail: bool,
) -> Result<(BinlogState, u64, Option<String>), BinlogError> {
    let gtids = read_gtid_list_on(fs, path)?;
    let mut state = BinlogState::from_gtids(gtids);
    let mut items = TransactionReader::new(FileReader::open_on(fs, path)?);
    let mut good_end = items.offset();
    let mut rotated_to = None;
    let mut last_whole = None;
    for item in items.by_ref() {
        match item {
            Ok(Item::Transaction(txn)) => {
                state.record(txn.gtid());
                last_whole = Some(txn.gtid());
                good_end = txn.end_offset;
            }
            Ok(Item::Other(ev)) => {
                if let Event::Rotate { next_file } = &ev.event {
                    rotated_to = Some(next_file.clone());
                }
                good_end = ev.offset + ev.len;
            }
            Err(e) => {
                tracing::debug!(file = ?path, seq, "tail scan stopped: {e}");
                let damage = analyze_damage(fs, path, good_end, last_whole, &e)?;
                if !damage.torn_tail && !unsynced_tail {
                    return Err(damage.into_error());
                }
                if !damage.torn_tail {
                    // The caller refuses the cut when it goes below what is known durable.
                    tracing::warn!(
                        file = ?path, offset = damage.offset,
                        "binlog damage followed by more than one write, in a tail written without fsync (durability \
                         none or network): a crash's page write-back order, cut from there"
                    );
                }
                recovery.cut_gtids = damage.gtids_after;
                recovery.reason = Some(e.to_string());
                recovery.incomplete_gtid = incomplete_gtid_at(fs, path, good_end);
                break;
            }
        }
    }
    Ok((state, good_end, rotated_to))
}

/// Damage found in a binlog file by [`inspect_file`]: where, what is around it, and whether it can be a torn
/// last write.
#[derive(Debug, Clone)]
pub struct Damage {
    /// The file's name.
    pub file: String,
    /// The file's size.
    pub file_bytes: u64,
    /// End of the last whole transaction (or other item) before the damage: where a cut would go.
    pub whole_end: u64,
    /// Offset of the first event that does not read whole.
    pub offset: u64,
    /// Why it does not read (checksum mismatch, truncated, out of place).
    pub reason: String,
    /// The last whole transaction before the damage.
    pub last_whole: Option<Gtid>,
    /// Every GTID still readable from `whole_end` to the end of the file (the incomplete transaction's, then
    /// those found past the damage).
    pub gtids_after: Vec<Gtid>,
    /// The first GTID readable past the damage itself.
    pub first_after: Option<Gtid>,
    /// Whether everything from `whole_end` on can be one commit group's append cut short (a torn last write):
    /// only events of one commit id follow, and no checkpoint or rotate event (each a later write).
    pub torn_tail: bool,
}

impl Damage {
    /// The GTIDs around the damage, as errors and the repair tool say them.
    pub fn gtid_range(&self) -> String {
        let before = self.last_whole.map_or("none in this file".into(), |g| g.to_string());
        let after = self.first_after.map_or("none readable".into(), |g| g.to_string());
        format!("last whole transaction before it {before}, first readable after it {after}")
    }

    fn into_error(self) -> BinlogError {
        let gtid_range = self.gtid_range();
        BinlogError::CorruptBeforeTail { file: self.file, offset: self.offset, reason: self.reason, gtid_range }
    }
}

/// Reads a whole binlog file, checking every event; returns the first damage, or None when it reads cleanly.
pub fn inspect_file(path: &Path) -> Result<Option<Damage>, BinlogError> {
    let fs = vfs::real();
    let mut items = TransactionReader::new(FileReader::open_on(&*fs, path)?);
    let mut good_end = items.offset();
    let mut last_whole = None;
    for item in items.by_ref() {
        match item {
            Ok(Item::Transaction(txn)) => {
                last_whole = Some(txn.gtid());
                good_end = txn.end_offset;
            }
            Ok(Item::Other(ev)) => good_end = ev.offset + ev.len,
            Err(e) => return analyze_damage(&*fs, path, good_end, last_whole, &e).map(Some),
        }
    }
    Ok(None)
}

/// Looks at the unreadable bytes from `from` (the end of the last whole item) to the end of the file: where the
/// first damaged event is, what is still readable after it, and whether it can all be a torn last write (see
/// [`Damage::torn_tail`]). Anything else after the damage means acknowledged data lies beyond it: corruption.
fn analyze_damage(
    fs: &dyn Fs,
    path: &Path,
    from: u64,
    last_whole: Option<Gtid>,
    first_error: &BinlogError,
) -> Result<Damage, BinlogError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut bytes = Vec::new();
    fs.open_read(path)
        .and_then(|mut f| f.seek(SeekFrom::Start(from)).and_then(|_| f.read_to_end(&mut bytes)))
        .map_err(|e| BinlogError::io(path, e))?;
    /// What the readable events past the last whole transaction show.
    #[derive(Default)]
    struct Seen {
        gtids: Vec<Gtid>,
        commit_ids: std::collections::BTreeSet<u64>,
        /// A checkpoint, rotate or header event: written by a later write than a commit group's.
        later_write: bool,
    }
    impl Seen {
        fn note(&mut self, event: &Event) {
            match event {
                Event::Gtid(g) => {
                    self.gtids.push(g.gtid);
                    self.commit_ids.insert(g.commit_id);
                }
                Event::Rows { .. } | Event::Commit { .. } => {}
                _ => self.later_write = true,
            }
        }
        fn one_write(&self) -> bool {
            !self.later_write && self.commit_ids.len() <= 1
        }
    }
    let mut seen = Seen::default();
    // The readable events of the incomplete transaction, up to the first damaged one.
    let mut at = 0;
    while let Ok((event, len)) = decode_event(&bytes[at..]) {
        seen.note(&event);
        at += len;
    }
    let damage = at;
    let before_damage = seen.gtids.len();
    // Past the damage: any event that still reads whole (its checksum makes a false match negligible), to the
    // end, so that what a cut would lose can be named.
    let mut i = damage + 1;
    while i < bytes.len() {
        match decode_event(&bytes[i..]) {
            Ok((event, len)) => {
                seen.note(&event);
                i += len;
            }
            Err(_) => i += 1,
        }
    }
    let file = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let reason = match first_error {
        BinlogError::Corrupt { reason, .. } => reason.to_string(),
        other => other.to_string(),
    };
    Ok(Damage {
        file,
        file_bytes: from + bytes.len() as u64,
        whole_end: from,
        offset: from + damage as u64,
        reason,
        last_whole,
        first_after: seen.gtids.get(before_damage).copied(),
        torn_tail: seen.one_write(),
        gtids_after: seen.gtids,
    })
}

/// The GTID of the event at `offset`, when one can still be read there.
fn incomplete_gtid_at(fs: &dyn Fs, path: &Path, offset: u64) -> Option<Gtid> {
    match FileReader::open_at_on(fs, path, offset).ok()?.next_event()? {
        Ok(ev) => match ev.event {
            Event::Gtid(g) => Some(g.gtid),
            _ => None,
        },
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binlog::event::GtidEvent;
    use crate::binlog::reader::read_gtid_list;

    fn txn_bytes(gtid: Gtid) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_event(&Event::Gtid(GtidEvent { gtid, commit_id: 1, flags: 0, commit_ts_us: 0 }), &mut buf);
        encode_event(&Event::Rows { changes: vec![] }, &mut buf);
        encode_event(&Event::Commit { changes: 0 }, &mut buf);
        buf
    }

    fn write(w: &mut BinlogWriter, seqs: std::ops::RangeInclusive<u64>) {
        for seq in seqs {
            let g = Gtid::new(0, 1, seq);
            w.append(&txn_bytes(g)).unwrap();
            w.record(g);
        }
        w.sync().unwrap();
    }

    #[test]
    fn a_torn_tail_is_cut_back_to_the_last_whole_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        write(&mut w, 1..=3);
        let whole = w.coord().offset;
        // Half of a fourth transaction reaches the disk before the crash.
        let partial = txn_bytes(Gtid::new(0, 1, 4));
        w.append(&partial[..partial.len() - 7]).unwrap();
        drop(w);
        let (w, rec) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        assert_eq!(rec.truncated_at, Some(BinlogCoord { file_seq: 1, offset: whole }));
        assert_eq!(rec.bytes_cut, partial.len() as u64 - 7);
        assert_eq!(rec.incomplete_gtid, Some(Gtid::new(0, 1, 4)), "the cut transaction is named");
        assert!(rec.reason.unwrap().contains("truncated"));
        assert_eq!(w.state().position().to_string(), "0-1-3");
        assert_eq!(std::fs::metadata(dir.path().join(file_name(1))).unwrap().len(), whole);
    }

    #[test]
    fn a_transaction_missing_its_commit_is_cut_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        write(&mut w, 1..=2);
        let whole = w.coord().offset;
        let mut buf = Vec::new();
        encode_event(
            &Event::Gtid(GtidEvent { gtid: Gtid::new(0, 1, 3), commit_id: 2, flags: 0, commit_ts_us: 0 }),
            &mut buf,
        );
        w.append(&buf).unwrap();
        drop(w);
        let (w, rec) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        assert_eq!(rec.truncated_at.unwrap().offset, whole);
        assert_eq!(rec.incomplete_gtid, Some(Gtid::new(0, 1, 3)));
        assert_eq!(w.state().position().to_string(), "0-1-2");
    }

    #[test]
    fn a_corrupt_byte_in_the_last_transaction_cuts_it() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        write(&mut w, 1..=2);
        let whole = w.coord().offset;
        write(&mut w, 3..=3);
        drop(w);
        let path = dir.path().join(file_name(1));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[whole as usize + 9] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
        let (w, rec) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        assert_eq!(rec.truncated_at.unwrap().offset, whole);
        assert!(rec.reason.unwrap().contains("checksum mismatch"));
        assert_eq!(w.state().position().to_string(), "0-1-2");
    }

    /// One transaction per commit group, as group commit writes them under light load.
    fn write_groups(w: &mut BinlogWriter, seqs: std::ops::RangeInclusive<u64>) {
        for seq in seqs {
            let g = Gtid::new(0, 1, seq);
            let mut buf = Vec::new();
            encode_event(&Event::Gtid(GtidEvent { gtid: g, commit_id: seq, flags: 0, commit_ts_us: 0 }), &mut buf);
            encode_event(&Event::Rows { changes: vec![] }, &mut buf);
            encode_event(&Event::Commit { changes: 0 }, &mut buf);
            w.append(&buf).unwrap();
            w.record(g);
            w.sync().unwrap();
        }
    }

    #[test]
    fn a_flipped_byte_before_the_last_write_is_refused_with_file_offset_and_gtids_and_nothing_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        write_groups(&mut w, 1..=4);
        let damaged = w.coord().offset;
        write_groups(&mut w, 5..=9);
        drop(w);
        let path = dir.path().join(file_name(1));
        let mut bytes = std::fs::read(&path).unwrap();
        let len = bytes.len() as u64;
        bytes[damaged as usize + 12] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let err = BinlogWriter::open(dir.path(), 1, 1 << 20).err().expect("refused");
        let BinlogError::CorruptBeforeTail { ref file, offset, ref gtid_range, .. } = err else { panic!("{err}") };
        assert_eq!((file.as_str(), offset), (file_name(1).as_str(), damaged));
        assert!(gtid_range.contains("0-1-4") && gtid_range.contains("0-1-6"), "{gtid_range}");
        let text = err.to_string();
        assert!(text.contains("not a torn tail") && text.contains("ferry-binlog --verify"), "{text}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len, "nothing was cut");
        assert!(!super::super::hwm::hwm_path(dir.path()).exists(), "nothing recorded either");
    }

    #[test]
    fn a_checkpoint_after_the_damage_makes_it_corruption_even_in_the_last_group() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        write_groups(&mut w, 1..=2);
        let damaged = w.coord().offset;
        write_groups(&mut w, 3..=3);
        w.write_checkpoint(BinlogCoord { file_seq: 1, offset: damaged }).unwrap();
        w.sync().unwrap();
        drop(w);
        let path = dir.path().join(file_name(1));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[damaged as usize + 6] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = BinlogWriter::open(dir.path(), 1, 1 << 20).err().expect("refused");
        assert!(matches!(err, BinlogError::CorruptBeforeTail { offset, .. } if offset == damaged), "{err}");
    }

    #[test]
    fn a_torn_last_group_is_cut_and_its_own_seq_nos_are_kept_in_the_high_water_mark() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        write_groups(&mut w, 1..=3);
        let whole = w.coord().offset;
        // The last group (two transactions, one commit id) reached the disk with a hole of zeros in its first
        // transaction: later blocks of the same write made it, earlier ones did not.
        let mut group = Vec::new();
        let mut hole = 0..0;
        for (seq, server) in [(4, 1), (5, 2)] {
            let gtid = Gtid::new(0, server, seq);
            let header =
                encode_event(&Event::Gtid(GtidEvent { gtid, commit_id: 99, flags: 0, commit_ts_us: 0 }), &mut group);
            encode_event(&Event::Rows { changes: vec![] }, &mut group);
            encode_event(&Event::Commit { changes: 0 }, &mut group);
            if hole.is_empty() {
                hole = header + 2..group.len() - 3;
            }
        }
        group[hole].fill(0);
        w.append(&group).unwrap();
        drop(w);
        let (w, rec) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        assert_eq!(rec.truncated_at, Some(BinlogCoord { file_seq: 1, offset: whole }));
        assert_eq!(rec.cut_gtids, vec![Gtid::new(0, 1, 4), Gtid::new(0, 2, 5)]);
        assert_eq!(w.state().position().to_string(), "0-1-3");
        // Only this server's own seq_no: the other server's transaction is fetched again from its master.
        assert_eq!(super::super::hwm::read(dir.path()).unwrap(), std::collections::BTreeMap::from([(0, 4)]));
    }

    #[test]
    fn in_a_tail_written_without_fsync_a_hole_before_later_groups_is_cut_as_a_crash_left_it() {
        // Durability `none`: groups 4..=6 were written, never fsynced; the power loss kept the pages of 5 and 6,
        // not group 4's (the page cache writes pages back in any order).
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        write_groups(&mut w, 1..=3);
        let durable = w.coord();
        write_groups(&mut w, 4..=4);
        let hole = w.coord().offset;
        write_groups(&mut w, 5..=6);
        drop(w);
        let path = dir.path().join(file_name(1));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[durable.offset as usize..hole as usize].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let err = BinlogWriter::open_keeping(dir.path(), 1, 1 << 20, Some(durable)).err().expect("fsynced tail");
        assert!(matches!(err, BinlogError::CorruptBeforeTail { .. }), "{err}");
        let open = |keep| BinlogWriter::open_keeping_on(vfs::real(), dir.path(), 1, 1 << 20, keep, true);
        let past = BinlogCoord { offset: durable.offset + 1, ..durable };
        assert!(open(Some(past)).is_err(), "never cut below what the store made durable");
        let (w, rec) = open(Some(durable)).unwrap();
        assert_eq!(rec.truncated_at, Some(durable));
        assert_eq!(rec.cut_gtids, vec![Gtid::new(0, 1, 5), Gtid::new(0, 1, 6)]);
        assert_eq!(w.state().position().to_string(), "0-1-3");
        assert_eq!(super::super::hwm::read(dir.path()).unwrap(), std::collections::BTreeMap::from([(0, 6)]));
    }

    #[test]
    fn damage_below_what_the_store_has_made_durable_is_refused_not_cut() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        write(&mut w, 1..=1);
        let damaged = w.coord().offset;
        write(&mut w, 2..=3);
        let durable = w.coord();
        drop(w);
        let path = dir.path().join(file_name(1));
        let mut bytes = std::fs::read(&path).unwrap();
        let len = bytes.len();
        bytes[damaged as usize + 6] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = BinlogWriter::open_keeping(dir.path(), 1, 1 << 20, Some(durable)).err().unwrap().to_string();
        assert!(err.contains(&format!("damaged at offset {damaged}")) && err.contains("checksum mismatch"), "{err}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len as u64, "nothing was cut");
    }

    #[test]
    fn rotation_carries_the_state_into_the_next_files_gtid_list() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        write(&mut w, 1..=2);
        w.rotate().unwrap();
        write(&mut w, 3..=3);
        assert_eq!(w.file_names(), [file_name(1), file_name(2)]);
        assert_eq!(read_gtid_list(&dir.path().join(file_name(2))).unwrap(), vec![Gtid::new(0, 1, 2)]);
        drop(w);
        let (w, rec) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        assert_eq!(rec.bytes_cut, 0);
        assert_eq!(w.state().position().to_string(), "0-1-3");
    }

    #[test]
    fn a_rotation_cut_short_is_completed_and_orphans_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        write(&mut w, 1..=1);
        // The rotate event reached the disk, the next file was half created and never indexed.
        let mut buf = Vec::new();
        encode_event(&Event::Rotate { next_file: file_name(2) }, &mut buf);
        w.append(&buf).unwrap();
        w.sync().unwrap();
        drop(w);
        std::fs::write(dir.path().join(file_name(2)), b"\xfeF").unwrap();
        let (w, rec) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        assert_eq!(rec.orphans_removed, vec![file_name(2)]);
        assert_eq!(w.file_names(), [file_name(1), file_name(2)]);
        assert_eq!(read_gtid_list(&dir.path().join(file_name(2))).unwrap(), vec![Gtid::new(0, 1, 1)]);
    }

    #[test]
    fn purge_keeps_the_current_file_and_what_recovery_needs() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 1, 1 << 20).unwrap();
        for i in 0..3 {
            write(&mut w, i * 2 + 1..=i * 2 + 2);
            w.rotate().unwrap();
        }
        let err = w.purge_before(&file_name(3), 2).unwrap_err();
        assert!(err.to_string().contains("still needed for crash recovery"), "{err}");
        assert!(w.purge_before("nope", 4).unwrap_err().to_string().contains("not a binlog file"));
        assert_eq!(w.purge_before(&file_name(3), 4).unwrap(), vec![file_name(1), file_name(2)]);
        assert!(!dir.path().join(file_name(1)).exists());
        assert_eq!(crate::binlog::read_index(dir.path()).unwrap(), vec![file_name(3), file_name(4)]);
    }
}

//! Appending to the binlog: one write and (at most) one fsync per commit group, rotation, purge, and the
//! tail recovery done when a binlog directory is opened after a crash.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::binlog::event::{encode_event, Checkpoint, Event, FormatDescription, BINLOG_FORMAT_VERSION};
use crate::binlog::reader::{read_gtid_list, FileReader, Item, TransactionReader};
use crate::binlog::{file_name, file_seq, read_index, sync_dir, write_index, BinlogCoord, BinlogError, MAGIC};
use crate::gtid::{BinlogState, Gtid, ServerId};

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
    /// Files found on disk after the index's last one (a rotation cut short) and removed.
    pub orphans_removed: Vec<String>,
}

/// Size and name of one binlog file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BinlogFileInfo {
    pub name: String,
    pub size: u64,
}

/// Appends events to the current binlog file.
pub struct BinlogWriter {
    dir: PathBuf,
    server_id: ServerId,
    /// Rotate once the current file reaches this size.
    max_file_bytes: u64,
    /// Files in index order; the last is being written.
    files: Vec<String>,
    file: File,
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
        std::fs::create_dir_all(dir).map_err(|e| BinlogError::io(dir, e))?;
        let mut files = read_index(dir)?;
        let mut recovery = TailRecovery { orphans_removed: remove_orphans(dir, &files)?, ..TailRecovery::default() };
        let Some(last) = files.last().cloned() else {
            let writer = Self::create_first(dir, server_id, max_file_bytes)?;
            return Ok((writer, recovery));
        };
        let seq =
            file_seq(&last).ok_or_else(|| BinlogError::Invalid(format!("index names {last:?}, not a binlog file")))?;
        let path = dir.join(&last);
        if !path.exists() {
            return Err(BinlogError::Missing { file: last, problem: "does not exist".into() });
        }
        let (state, good_end, rotated_to) = scan_tail(&path, &mut recovery, seq)?;
        let end = BinlogCoord { file_seq: seq, offset: good_end };
        if let Some(keep) = keep_through.filter(|k| *k > end) {
            return Err(BinlogError::Invalid(format!(
                "binlog {last} is damaged at offset {good_end} ({}), but the store is durable through {keep}: \
                 those transactions were acknowledged, so the file is left as it is; restore the binlog from a backup",
                recovery.reason.as_deref().unwrap_or("it ends early")
            )));
        }
        let file = OpenOptions::new().write(true).open(&path).map_err(|e| BinlogError::io(&path, e))?;
        let len = file.metadata().map_err(|e| BinlogError::io(&path, e))?.len();
        if good_end < len {
            recovery.bytes_cut = len - good_end;
            recovery.truncated_at = Some(BinlogCoord { file_seq: seq, offset: good_end });
            file.set_len(good_end).and_then(|_| file.sync_all()).map_err(|e| BinlogError::io(&path, e))?;
            tracing::warn!(
                file = %last, offset = good_end, bytes_cut = recovery.bytes_cut,
                incomplete_gtid = ?recovery.incomplete_gtid.map(|g| g.to_string()),
                reason = recovery.reason.as_deref().unwrap_or(""),
                "binlog tail was torn or corrupt: truncated to the last whole transaction"
            );
        }
        let mut writer = BinlogWriter {
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

    fn create_first(dir: &Path, server_id: ServerId, max_file_bytes: u64) -> Result<Self, BinlogError> {
        let name = file_name(1);
        let path = dir.join(&name);
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| BinlogError::io(&path, e))?;
        let mut writer = BinlogWriter {
            dir: dir.to_path_buf(),
            server_id,
            max_file_bytes,
            files: vec![],
            file,
            file_seq: 1,
            offset: 0,
            synced_offset: 0,
            state: BinlogState::new(),
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
        self.file.write_all(&buf).and_then(|_| self.file.sync_all()).map_err(|e| BinlogError::io(&path, e))?;
        self.offset = buf.len() as u64;
        self.synced_offset = self.offset;
        self.files.push(name);
        write_index(&self.dir, &self.files)?;
        sync_dir(&self.dir)
    }

    fn current_path(&self) -> PathBuf {
        self.dir.join(file_name(self.file_seq))
    }

    /// Appends already-encoded events (a whole commit group) with one write.
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), BinlogError> {
        let path = self.current_path();
        self.file.write_all(bytes).map_err(|e| BinlogError::io(path, e))?;
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
        self.file.sync_data().map_err(|e| BinlogError::io(self.current_path(), e))?;
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
        self.file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| BinlogError::io(&path, e))?;
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
        write_index(&self.dir, &self.files)?;
        for name in &removed {
            let path = self.dir.join(name);
            std::fs::remove_file(&path).map_err(|e| BinlogError::io(&path, e))?;
        }
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

    pub fn file_names(&self) -> &[String] {
        &self.files
    }

    pub fn files(&self) -> Vec<BinlogFileInfo> {
        self.files
            .iter()
            .map(|name| BinlogFileInfo {
                name: name.clone(),
                size: std::fs::metadata(self.dir.join(name)).map_or(0, |m| m.len()),
            })
            .collect()
    }
}

/// Removes binlog files newer than the index's last: left by a rotation that crashed before updating the index.
fn remove_orphans(dir: &Path, files: &[String]) -> Result<Vec<String>, BinlogError> {
    let newest = files.last().and_then(|f| file_seq(f)).unwrap_or(0);
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| BinlogError::io(dir, e))? {
        let entry = entry.map_err(|e| BinlogError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if file_seq(&name).is_some_and(|s| s > newest) {
            std::fs::remove_file(entry.path()).map_err(|e| BinlogError::io(entry.path(), e))?;
            tracing::warn!(file = %name, "removed a binlog file that a rotation left out of the index");
            removed.push(name);
        }
    }
    Ok(removed)
}

/// Reads the last file to its end: rebuilds the binlog state and finds the end of its last whole item.
/// Returns (state, offset to keep, next file named by a closing rotate event).
fn scan_tail(
    path: &Path,
    recovery: &mut TailRecovery,
    seq: u64,
) -> Result<(BinlogState, u64, Option<String>), BinlogError> {
    let gtids = read_gtid_list(path)?;
    let mut state = BinlogState::from_gtids(gtids);
    let mut items = TransactionReader::new(FileReader::open(path)?);
    let mut good_end = items.offset();
    let mut rotated_to = None;
    for item in items.by_ref() {
        match item {
            Ok(Item::Transaction(txn)) => {
                state.record(txn.gtid());
                good_end = txn.end_offset;
            }
            Ok(Item::Other(ev)) => {
                if let Event::Rotate { next_file } = &ev.event {
                    rotated_to = Some(next_file.clone());
                }
                good_end = ev.offset + ev.len;
            }
            Err(e) => {
                recovery.reason = Some(e.to_string());
                recovery.incomplete_gtid = incomplete_gtid_at(path, good_end);
                tracing::debug!(file = ?path, seq, "tail scan stopped: {e}");
                break;
            }
        }
    }
    Ok((state, good_end, rotated_to))
}

/// The GTID of the event at `offset`, when one can still be read there.
fn incomplete_gtid_at(path: &Path, offset: u64) -> Option<Gtid> {
    match FileReader::open_at(path, offset).ok()?.next_event()? {
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

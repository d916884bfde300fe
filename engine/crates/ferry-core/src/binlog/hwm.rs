//! The seq_no high-water mark: per domain, a seq_no at or above every seq_no a client or a replica may have seen,
//! kept durably in `seq-no.hwm` beside the binlog index, so the allocator restarts above it even when the binlog
//! lost its tail (a torn last write, a crash with durability `none` / `network`, a `ferry-binlog --truncate-at`).
//!
//! - With durability `local` (the binlog fsynced before anything is acknowledged or streamed), the binlog itself
//!   holds every seq_no anyone saw; the mark is raised only when start-up trims a torn tail or the repair tool
//!   cuts a file, to the seq_nos of what was cut.
//! - Below `local`, events are acknowledged and streamed before they are fsynced: the commit leader reserves
//!   seq_nos ahead, [`SEQ_NO_RESERVE`] at a time, writing the mark before it writes a group that goes past it.
//!   After a crash the allocator starts above the reservation (a gap in the domain's seq_nos, never a reuse); a
//!   clean stop writes the exact counters, so a clean restart leaves no gap.
//!
//! The file is JSON (`{"0": 1042, "7": 3}`: domain to seq_no), replaced atomically (temporary file, fsync, rename,
//! fsync of the directory).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::binlog::{sync_dir, BinlogError};
use crate::fault::{self, sites};
use crate::gtid::{DomainId, Gtid, SeqNo};
use crate::vfs::{self, Fs};

/// The mark's file name, in the binlog directory.
pub const HWM_FILE: &str = "seq-no.hwm";
/// How far ahead of the seq_nos in use the leader reserves, below durability `local` (one mark write per this
/// many transactions of a domain).
pub const SEQ_NO_RESERVE: SeqNo = 1_000_000;

pub fn hwm_path(dir: &Path) -> PathBuf {
    dir.join(HWM_FILE)
}

/// Reads the mark (empty when there is none yet).
pub fn read(dir: &Path) -> Result<BTreeMap<DomainId, SeqNo>, BinlogError> {
    read_on(&*vfs::real(), dir)
}

/// [`read`] on the file layer `fs`.
pub fn read_on(fs: &dyn Fs, dir: &Path) -> Result<BTreeMap<DomainId, SeqNo>, BinlogError> {
    let path = hwm_path(dir);
    let text = match fs.read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(BinlogError::io(path, e)),
    };
    serde_json::from_slice(&text).map_err(|e| {
        BinlogError::Invalid(format!(
            "{} is not a seq_no high-water mark ({e}); it is replaced atomically, so this is damage: restore it \
             or remove it only if no replica or client can have seen seq_nos past the binlog's end",
            path.display()
        ))
    })
}

/// Replaces the mark durably.
pub fn write(dir: &Path, marks: &BTreeMap<DomainId, SeqNo>) -> Result<(), BinlogError> {
    write_on(&*vfs::real(), dir, marks)
}

/// [`write()`] on the file layer `fs`.
pub fn write_on(fs: &dyn Fs, dir: &Path, marks: &BTreeMap<DomainId, SeqNo>) -> Result<(), BinlogError> {
    let path = hwm_path(dir);
    let tmp = path.with_extension("hwm.tmp");
    let text = serde_json::to_vec(marks).expect("a map of integers serializes");
    let mut f = fs.create(&tmp).map_err(|e| BinlogError::io(&tmp, e))?;
    fault::write_all(&mut f, &text, sites::SEQ_NO_HWM)
        .and_then(|_| fault::check(sites::SEQ_NO_HWM))
        .and_then(|_| f.sync_all())
        .map_err(|e| BinlogError::io(&tmp, e))?;
    fs.rename(&tmp, &path).map_err(|e| BinlogError::io(&path, e))?;
    sync_dir(fs, dir)
}

/// Raises the mark to cover `gtids` (read, merge, write when it moved). Returns the mark.
pub fn raise(dir: &Path, gtids: impl IntoIterator<Item = Gtid>) -> Result<BTreeMap<DomainId, SeqNo>, BinlogError> {
    raise_on(&*vfs::real(), dir, gtids)
}

/// [`raise`] on the file layer `fs`.
pub fn raise_on(
    fs: &dyn Fs,
    dir: &Path,
    gtids: impl IntoIterator<Item = Gtid>,
) -> Result<BTreeMap<DomainId, SeqNo>, BinlogError> {
    let mut marks = read_on(fs, dir)?;
    let mut moved = false;
    for g in gtids {
        let mark = marks.entry(g.domain).or_insert(0);
        if g.seq > *mark {
            *mark = g.seq;
            moved = true;
        }
    }
    if moved {
        write_on(fs, dir, &marks)?;
    }
    Ok(marks)
}

/// The commit leader's reservation of seq_nos ahead of use (durability below `local`).
#[derive(Debug)]
pub struct Reservation {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    /// What the file says now: no seq_no above it may be written before the file is raised.
    reserved: BTreeMap<DomainId, SeqNo>,
}

impl Reservation {
    pub fn new(dir: &Path, reserved: BTreeMap<DomainId, SeqNo>) -> Self {
        Self::new_on(vfs::real(), dir, reserved)
    }

    /// [`Reservation::new`] on the file layer `fs`.
    pub fn new_on(fs: Arc<dyn Fs>, dir: &Path, reserved: BTreeMap<DomainId, SeqNo>) -> Self {
        Reservation { fs, dir: dir.to_path_buf(), reserved }
    }

    /// Forgets what was reserved (the mark file was emptied: RESET MASTER with `reuse_seq_nos`).
    pub fn forget(&mut self) {
        self.reserved.clear();
    }

    /// Makes sure the file covers `gtids` before they are written; raises it [`SEQ_NO_RESERVE`] ahead when not.
    pub fn cover(&mut self, gtids: impl IntoIterator<Item = Gtid>) -> Result<(), BinlogError> {
        // The common case (every seq_no inside the reservation) allocates nothing.
        let mut next: Option<BTreeMap<DomainId, SeqNo>> = None;
        for g in gtids {
            let mark = next.as_ref().unwrap_or(&self.reserved).get(&g.domain).copied().unwrap_or(0);
            if g.seq > mark {
                next.get_or_insert_with(|| self.reserved.clone())
                    .insert(g.domain, g.seq.saturating_add(SEQ_NO_RESERVE));
            }
        }
        if let Some(next) = next {
            write_on(&*self.fs, &self.dir, &next)?;
            self.reserved = next;
        }
        Ok(())
    }

    /// Brings the file down to exactly `used` (a clean stop: the next start leaves no gap). Safe at any time
    /// with the binlog lock held: a later seq_no above it raises the file again before it is written. A domain
    /// `used` does not have (the binlog no longer shows it: deleted from the binlog state, or all of it cut from
    /// a torn tail) keeps its mark, for its seq_nos may have been seen.
    pub fn settle(&mut self, used: BTreeMap<DomainId, SeqNo>) -> Result<(), BinlogError> {
        let mut exact = self.reserved.clone();
        for (domain, mark) in exact.iter_mut() {
            *mark = used.get(domain).copied().unwrap_or(*mark);
        }
        for (domain, seq) in used {
            exact.entry(domain).or_insert(seq);
        }
        if exact != self.reserved {
            write_on(&*self.fs, &self.dir, &exact)?;
            self.reserved = exact;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_only_goes_up_and_survives_rereading() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_empty());
        raise(dir.path(), [Gtid::new(0, 1, 5), Gtid::new(3, 1, 9)]).unwrap();
        raise(dir.path(), [Gtid::new(0, 1, 2)]).unwrap();
        assert_eq!(read(dir.path()).unwrap(), BTreeMap::from([(0, 5), (3, 9)]));
    }

    #[test]
    fn a_reservation_writes_once_per_block_and_settles_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Reservation::new(dir.path(), BTreeMap::new());
        r.cover([Gtid::new(0, 1, 1)]).unwrap();
        assert_eq!(read(dir.path()).unwrap()[&0], 1 + SEQ_NO_RESERVE);
        std::fs::remove_file(hwm_path(dir.path())).unwrap();
        r.cover([Gtid::new(0, 1, 2)]).unwrap();
        assert!(!hwm_path(dir.path()).exists(), "inside the reservation: no write");
        r.settle(BTreeMap::from([(0, 2)])).unwrap();
        assert_eq!(read(dir.path()).unwrap(), BTreeMap::from([(0, 2)]));
        r.cover([Gtid::new(0, 1, 3)]).unwrap();
        assert_eq!(read(dir.path()).unwrap()[&0], 3 + SEQ_NO_RESERVE);
    }

    #[test]
    fn settling_keeps_the_mark_of_a_domain_the_binlog_no_longer_shows() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Reservation::new(dir.path(), BTreeMap::new());
        r.cover([Gtid::new(0, 1, 1), Gtid::new(4, 1, 7)]).unwrap();
        r.settle(BTreeMap::from([(0, 1)])).unwrap();
        assert_eq!(read(dir.path()).unwrap(), BTreeMap::from([(0, 1), (4, 7 + SEQ_NO_RESERVE)]));
    }

    #[test]
    fn a_damaged_mark_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(hwm_path(dir.path()), b"{not json").unwrap();
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(err.contains(HWM_FILE), "{err}");
    }
}

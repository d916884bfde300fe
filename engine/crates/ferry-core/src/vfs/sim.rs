//! A simulated disk for power-loss tests (built for tests, or with the `sim` feature; never in a release binary).
//!
//! Every file keeps its durable bytes apart from the writes made since its last fsync; every directory entry
//! (a created file, a rename, a removal, a new directory) is durable only once its directory is fsynced. Each
//! mutating call (write, truncate, fsync, directory fsync, create, rename, remove, mkdir) counts as one I/O
//! operation; [`SimFs::crash_at`] arms a power loss at a chosen operation. At that point the disk keeps what
//! was durable and, depending on the crash's seed, part of what was not (see [`SimFs::crash_at`]); that image
//! becomes [`SimFs::after_crash`], and every later call on the crashed disk fails (the machine is off), so the
//! crashed process can acknowledge nothing more.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::vfs::{parent_dir, Fs, FsFile};

/// The unit a disk writes atomically.
const SECTOR: u64 = 512;
/// The unit the page cache writes back.
const PAGE: u64 = 4096;

/// A directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    File(u64),
    Dir,
}

/// A write not yet fsynced, kept so that a crash can decide how much of it reached the disk.
#[derive(Debug, Clone)]
enum Pending {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

impl Pending {
    fn apply(&self, bytes: &mut Vec<u8>) {
        match self {
            Pending::Write { offset, data } => write_at(bytes, *offset, data),
            Pending::SetLen(len) => bytes.resize(*len as usize, 0),
        }
    }
}

fn write_at(bytes: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let (at, end) = (offset as usize, offset as usize + data.len());
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[at..end].copy_from_slice(data);
}

#[derive(Debug, Default, Clone)]
struct Inode {
    /// What reads see (the page cache).
    current: Vec<u8>,
    /// What survives a power loss for sure.
    durable: Vec<u8>,
    /// The writes from `durable` to `current`, in order.
    pending: Vec<Pending>,
}

/// How much of what was not fsynced a crash keeps, per file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// Only fsynced bytes.
    Unsynced,
    /// Every unsynced write but the last, which is torn (a prefix of it, maybe followed by garbage) or lost.
    TornLast,
    /// A random prefix of the unsynced writes (in order), the next one torn or lost.
    Prefix,
    /// Page write-back in any order: each page the unsynced writes touched has its new content or its old, on
    /// its own; the size is the old or the new one.
    Scattered,
}

/// A small deterministic generator (splitmix64): a seed replays a crash exactly.
#[derive(Debug, Clone)]
pub struct SimRng(u64);

impl SimRng {
    pub fn new(seed: u64) -> Self {
        SimRng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability 1 / `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

#[derive(Debug, Default)]
struct State {
    inodes: HashMap<u64, Inode>,
    next_ino: u64,
    /// The namespace as calls see it.
    entries: BTreeMap<PathBuf, Entry>,
    /// The namespace as a power loss leaves it.
    durable: BTreeMap<PathBuf, Entry>,
    /// I/O operations so far.
    ops: u64,
    /// The operation at which the power goes, and the crash's seed.
    crash_at: Option<(u64, u64)>,
    /// What the crash loses, when not left to its seed.
    loss: Option<Loss>,
    /// Set at the crash: the disk as it comes back.
    image: Option<Box<State>>,
    /// Set at the crash: the operation it interrupted (kind and path).
    crash_note: Option<String>,
}

fn power_lost() -> io::Error {
    io::Error::other("simulated power loss: the disk is gone")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file or directory (simulated disk)", path.display()))
}

impl State {
    fn root() -> Self {
        let mut state = State::default();
        state.entries.insert(PathBuf::from("/"), Entry::Dir);
        state.durable.insert(PathBuf::from("/"), Entry::Dir);
        state
    }

    fn alive(&self) -> io::Result<()> {
        if self.image.is_some() {
            Err(power_lost())
        } else {
            Ok(())
        }
    }

    /// Counts one I/O operation (`kind` on `path`); the power goes when it is the armed one.
    fn tick(&mut self, kind: &'static str, path: &Path) -> io::Result<()> {
        self.alive()?;
        self.ops += 1;
        if let Some((at, seed)) = self.crash_at {
            if self.ops >= at {
                self.crash_note = Some(format!("{kind} {}", path.display()));
                self.image = Some(Box::new(self.survivors(seed)));
                return Err(power_lost());
            }
        }
        Ok(())
    }

    fn inode(&mut self, ino: u64) -> &mut Inode {
        self.inodes.get_mut(&ino).expect("open files keep their inode")
    }

    fn pend(&mut self, ino: u64, op: Pending) {
        let inode = self.inode(ino);
        op.apply(&mut inode.current);
        inode.pending.push(op);
    }

    fn sync(&mut self, ino: u64) {
        let inode = self.inode(ino);
        inode.durable = inode.current.clone();
        inode.pending.clear();
    }

    fn file(&self, path: &Path) -> io::Result<u64> {
        match self.entries.get(path) {
            Some(Entry::File(ino)) => Ok(*ino),
            Some(Entry::Dir) => Err(io::Error::other(format!("{} is a directory", path.display()))),
            None => Err(not_found(path)),
        }
    }

    fn parent_is_dir(&self, path: &Path) -> io::Result<()> {
        match self.entries.get(parent_dir(path)) {
            Some(Entry::Dir) => Ok(()),
            _ => Err(not_found(parent_dir(path))),
        }
    }

    fn create(&mut self, path: &Path) -> io::Result<u64> {
        self.parent_is_dir(path)?;
        self.tick("create", path)?;
        match self.entries.get(path).copied() {
            Some(Entry::File(ino)) => {
                self.pend(ino, Pending::SetLen(0));
                Ok(ino)
            }
            Some(Entry::Dir) => Err(io::Error::other(format!("{} is a directory", path.display()))),
            None => {
                self.next_ino += 1;
                let ino = self.next_ino;
                self.inodes.insert(ino, Inode::default());
                self.entries.insert(path.to_path_buf(), Entry::File(ino));
                Ok(ino)
            }
        }
    }

    fn sync_dir(&mut self, dir: &Path) {
        let names: Vec<PathBuf> =
            self.entries.keys().chain(self.durable.keys()).filter(|p| p.parent() == Some(dir)).cloned().collect();
        for name in names {
            match self.entries.get(&name) {
                Some(entry) => self.durable.insert(name, *entry),
                None => self.durable.remove(&name),
            };
        }
    }

    /// The disk as a power loss now leaves it.
    fn survivors(&self, seed: u64) -> State {
        let mut rng = SimRng::new(seed);
        let drawn = match rng.below(4) {
            0 => Loss::Unsynced,
            1 => Loss::TornLast,
            2 => Loss::Prefix,
            _ => Loss::Scattered,
        };
        let loss = self.loss.unwrap_or(drawn);
        let mut image = State::root();
        // An entry survives when its own and every ancestor's entry are durable.
        let reachable = |path: &Path| {
            path.ancestors().skip(1).all(|a| a.as_os_str().is_empty() || self.durable.get(a) == Some(&Entry::Dir))
        };
        for (path, entry) in self.durable.iter().filter(|(p, _)| reachable(p)) {
            image.entries.insert(path.clone(), *entry);
            if let Entry::File(ino) = entry {
                let bytes = Self::surviving_bytes(&self.inodes[ino], loss, &mut rng);
                image.inodes.insert(*ino, Inode { current: bytes.clone(), durable: bytes, pending: Vec::new() });
            }
        }
        image.durable = image.entries.clone();
        image.next_ino = self.next_ino;
        image
    }

    fn scattered(inode: &Inode, rng: &mut SimRng) -> Vec<u8> {
        let (old, new) = (&inode.durable, &inode.current);
        let len = if rng.one_in(2) { old.len() } else { new.len() };
        let mut touched = std::collections::BTreeSet::new();
        for op in &inode.pending {
            let (from, to) = match op {
                Pending::Write { offset, data } => (*offset, *offset + data.len() as u64),
                Pending::SetLen(len) => (*len, (*len).max(old.len() as u64).max(new.len() as u64)),
            };
            touched.extend(from / PAGE..to.div_ceil(PAGE));
        }
        let mut bytes = old.clone();
        bytes.resize(len, 0);
        for page in touched {
            let (from, to) = ((page * PAGE) as usize, (((page + 1) * PAGE) as usize).min(len));
            if from < to && rng.one_in(2) {
                for (at, byte) in bytes[from..to].iter_mut().enumerate() {
                    *byte = new.get(from + at).copied().unwrap_or(0);
                }
            }
        }
        bytes
    }

    fn surviving_bytes(inode: &Inode, loss: Loss, rng: &mut SimRng) -> Vec<u8> {
        let mut bytes = inode.durable.clone();
        let n = inode.pending.len() as u64;
        let kept = match loss {
            Loss::Unsynced => return bytes,
            Loss::Scattered => return Self::scattered(inode, rng),
            Loss::TornLast => n.saturating_sub(1),
            Loss::Prefix => rng.below(n + 1),
        };
        for op in &inode.pending[..kept as usize] {
            op.apply(&mut bytes);
        }
        match inode.pending.get(kept as usize) {
            Some(Pending::Write { offset, data }) if rng.one_in(2) => {
                // A torn write. Appended bytes are cut anywhere, maybe followed by a few bytes of garbage (the
                // file's new size made it, not all of its data); an overwrite keeps whole sectors only, as disks
                // write a sector atomically (which redb's header relies on).
                let cut = offset + rng.below(data.len() as u64);
                let appending = *offset >= bytes.len() as u64;
                let kept = if appending { cut - offset } else { (cut / SECTOR * SECTOR).saturating_sub(*offset) };
                let mut torn = data[..kept as usize].to_vec();
                if appending && rng.one_in(2) {
                    let garbage = (rng.below(64) + 1).min((data.len() - torn.len()) as u64);
                    torn.extend((0..garbage).map(|_| rng.next_u64() as u8));
                }
                write_at(&mut bytes, *offset, &torn);
            }
            _ => {}
        }
        bytes
    }
}

/// A simulated disk; clones share it.
#[derive(Debug, Clone)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

impl Default for SimFs {
    fn default() -> Self {
        Self::new()
    }
}

impl SimFs {
    /// An empty disk holding only the root directory `/`.
    pub fn new() -> Self {
        SimFs { state: Arc::new(Mutex::new(State::root())) }
    }

    /// I/O operations done on this disk so far.
    pub fn ops(&self) -> u64 {
        self.state.lock().ops
    }

    /// Arms a power loss at the `op`-th I/O operation of this disk (counted from its creation). `seed` picks how
    /// much of what was not fsynced survives ([`Loss`]: nothing; all but a torn or lost last write; or a random
    /// prefix of the writes, the next one torn or lost), for each file on its own.
    pub fn crash_at(&self, op: u64, seed: u64) {
        self.state.lock().crash_at = Some((op, seed));
    }

    /// Makes every later crash lose `loss`, whatever its seed (for tests of one case).
    pub fn set_loss(&self, loss: Loss) {
        self.state.lock().loss = Some(loss);
    }

    /// Loses power now (as if at the next operation).
    pub fn crash_now(&self, seed: u64) {
        let mut state = self.state.lock();
        if state.image.is_none() {
            let at = state.ops + 1;
            state.crash_at = Some((at, seed));
            let _ = state.tick("idle", Path::new("/"));
        }
    }

    pub fn crashed(&self) -> bool {
        self.state.lock().image.is_some()
    }

    /// After a crash: the operation it interrupted, as `kind path` (`idle /` for [`SimFs::crash_now`]).
    pub fn crash_note(&self) -> Option<String> {
        self.state.lock().crash_note.clone()
    }

    /// After a crash: a new disk holding what survived it (None before any crash).
    pub fn after_crash(&self) -> Option<SimFs> {
        let state = self.state.lock();
        let image = state.image.as_ref()?;
        let copy = State {
            inodes: image.inodes.clone(),
            next_ino: image.next_ino,
            entries: image.entries.clone(),
            durable: image.durable.clone(),
            ..State::default()
        };
        Some(SimFs { state: Arc::new(Mutex::new(copy)) })
    }

    fn open(&self, path: &Path, writable: bool) -> io::Result<Box<dyn FsFile>> {
        let state = self.state.lock();
        state.alive()?;
        let ino = state.file(path)?;
        Ok(Box::new(SimFile { state: self.state.clone(), ino, path: path.to_path_buf(), pos: 0, writable }))
    }
}

impl Fs for SimFs {
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.open(path, false)
    }

    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.open(path, true)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let ino = self.state.lock().create(path)?;
        Ok(Box::new(SimFile { state: self.state.clone(), ino, path: path.to_path_buf(), pos: 0, writable: true }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.file(from)?;
        state.parent_is_dir(to)?;
        state.tick("rename", from)?;
        let entry = state.entries.remove(from).expect("checked above");
        state.entries.insert(to.to_path_buf(), entry);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.file(path)?;
        state.tick("remove", path)?;
        state.entries.remove(path);
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.state.lock();
        state.alive()?;
        if state.entries.get(dir) != Some(&Entry::Dir) {
            return Err(not_found(dir));
        }
        Ok(state
            .entries
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }

    fn exists(&self, path: &Path) -> bool {
        self.state.lock().entries.contains_key(path)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.alive()?;
        let missing: Vec<PathBuf> =
            dir.ancestors().take_while(|d| !state.entries.contains_key(*d)).map(Path::to_path_buf).collect();
        for created in missing.iter().rev() {
            state.parent_is_dir(created)?;
            state.tick("mkdir", created)?;
            state.entries.insert(created.clone(), Entry::Dir);
            state.tick("dir-sync", parent_dir(created))?;
            state.sync_dir(parent_dir(created));
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        if state.entries.get(dir) != Some(&Entry::Dir) {
            state.alive()?;
            return Err(not_found(dir));
        }
        state.tick("dir-sync", dir)?;
        state.sync_dir(dir);
        Ok(())
    }

    fn store_backend(&self, path: &Path) -> io::Result<Option<Box<dyn redb::StorageBackend>>> {
        let mut state = self.state.lock();
        state.alive()?;
        let ino = match state.file(path) {
            Ok(ino) => ino,
            Err(e) if e.kind() == io::ErrorKind::NotFound => state.create(path)?,
            Err(e) => return Err(e),
        };
        Ok(Some(Box::new(SimBackend { state: self.state.clone(), ino, path: path.to_path_buf() })))
    }
}

/// An open file of the simulated disk.
struct SimFile {
    state: Arc<Mutex<State>>,
    ino: u64,
    /// The name it was opened by.
    path: PathBuf,
    pos: u64,
    writable: bool,
}

impl Read for SimFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut state = self.state.lock();
        state.alive()?;
        let bytes = &state.inode(self.ino).current;
        let at = (self.pos as usize).min(bytes.len());
        let n = buf.len().min(bytes.len() - at);
        buf[..n].copy_from_slice(&bytes[at..at + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Write for SimFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.writable {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "file opened read-only"));
        }
        let mut state = self.state.lock();
        state.alive()?;
        // The write is pending before the operation counts, so a crash at it can tear it.
        state.pend(self.ino, Pending::Write { offset: self.pos, data: buf.to_vec() });
        self.pos += buf.len() as u64;
        state.tick("write", &self.path)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for SimFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let len = self.len()?;
        let pos = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => len.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.pos.checked_add_signed(delta),
        };
        self.pos = pos.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the file's start"))?;
        Ok(self.pos)
    }
}

impl FsFile for SimFile {
    fn sync_data(&mut self) -> io::Result<()> {
        let mut state = self.state.lock();
        state.tick("fsync", &self.path)?;
        state.sync(self.ino);
        Ok(())
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut state = self.state.lock();
        state.alive()?;
        state.pend(self.ino, Pending::SetLen(len));
        state.tick("truncate", &self.path)
    }

    fn len(&self) -> io::Result<u64> {
        let mut state = self.state.lock();
        state.alive()?;
        Ok(state.inode(self.ino).current.len() as u64)
    }
}

/// The store's redb file on the simulated disk: redb's own commits (durable or not) go through the same
/// durable-versus-pending bookkeeping as every other file.
#[derive(Debug)]
struct SimBackend {
    state: Arc<Mutex<State>>,
    ino: u64,
    path: PathBuf,
}

impl redb::StorageBackend for SimBackend {
    fn len(&self) -> Result<u64, io::Error> {
        let mut state = self.state.lock();
        state.alive()?;
        Ok(state.inode(self.ino).current.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        let mut state = self.state.lock();
        state.alive()?;
        let bytes = &state.inode(self.ino).current;
        let end = offset as usize + out.len();
        if end > bytes.len() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end of the store file"));
        }
        out.copy_from_slice(&bytes[offset as usize..end]);
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        let mut state = self.state.lock();
        state.alive()?;
        state.pend(self.ino, Pending::SetLen(len));
        state.tick("truncate", &self.path)
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        let mut state = self.state.lock();
        state.tick("fsync", &self.path)?;
        state.sync(self.ino);
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        let mut state = self.state.lock();
        state.alive()?;
        state.pend(self.ino, Pending::Write { offset, data: data.to_vec() });
        state.tick("write", &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_file(fs: &SimFs, path: &str, bytes: &[u8], sync: bool) {
        let mut f = fs.create(Path::new(path)).unwrap();
        f.write_all(bytes).unwrap();
        if sync {
            f.sync_data().unwrap();
        }
    }

    #[test]
    fn only_fsynced_bytes_and_synced_entries_survive_a_crash() {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        write_file(&fs, "/d/kept", b"durable", true);
        write_file(&fs, "/d/unsynced-entry", b"x", true);
        fs.sync_dir(Path::new("/d")).unwrap();
        write_file(&fs, "/d/new", b"file fsynced, directory not", true);
        let mut f = fs.open_write(Path::new("/d/kept")).unwrap();
        f.seek(SeekFrom::End(0)).unwrap();
        f.write_all(b" and more").unwrap();
        fs.rename(Path::new("/d/unsynced-entry"), Path::new("/d/renamed")).unwrap();
        // Seed 0's first draw picks `Loss::Unsynced`... whatever it picks, the fsynced part is there.
        fs.crash_now(3);
        let after = fs.after_crash().unwrap();
        assert!(after.read(Path::new("/d/kept")).unwrap().starts_with(b"durable"));
        assert!(!after.exists(Path::new("/d/new")), "created, never made durable in its directory");
        assert!(after.exists(Path::new("/d/unsynced-entry")) && !after.exists(Path::new("/d/renamed")));
        assert!(fs.read(Path::new("/d/kept")).is_err(), "the crashed disk answers nothing");
    }

    #[test]
    fn a_crash_at_a_write_may_tear_it_and_never_keeps_more_than_was_written() {
        let mut torn = 0;
        for seed in 0..200 {
            let fs = SimFs::new();
            write_file(&fs, "/f", b"0123456789", true);
            fs.sync_dir(Path::new("/")).unwrap();
            let at = fs.ops() + 1;
            fs.crash_at(at, seed);
            let mut f = fs.open_write(Path::new("/f")).unwrap();
            f.seek(SeekFrom::End(0)).unwrap();
            assert!(f.write_all(b"abcdefghijklmnopqrstuvwxyz").is_err());
            let bytes = fs.after_crash().unwrap().read(Path::new("/f")).unwrap();
            assert!(bytes.starts_with(b"0123456789") && bytes.len() <= 36, "seed {seed}: {bytes:?}");
            torn += usize::from(bytes.len() > 10 && bytes.len() < 36);
        }
        assert!(torn > 10, "tears happen: {torn}");
    }

    #[test]
    fn a_new_directory_is_durable_in_its_parent() {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/a/b")).unwrap();
        write_file(&fs, "/a/b/f", b"x", true);
        fs.sync_dir(Path::new("/a/b")).unwrap();
        fs.crash_now(0);
        assert_eq!(fs.after_crash().unwrap().read(Path::new("/a/b/f")).unwrap(), b"x");
    }
}

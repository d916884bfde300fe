//! The file layer the binlog, its index, the seq_no high-water mark, the store and the relay log write through.
//!
//! [`Fs`] names every file-system operation their durability depends on: open for reading or appending, create,
//! write, `fsync` of a file and of a directory, truncate, rename, remove and listing. [`RealFs`] passes each
//! straight to `std::fs` (the store opens its redb file itself); the `sim` module (tests, or the `sim` feature)
//! is a simulated disk that keeps only what was fsynced when it "loses power", to test crash recovery against
//! missing fsyncs, which a killed process on a real disk never shows (the page cache keeps every write).
//!
//! - [`fence`]: the store's redb backend, which a node whose storage failed cuts off before redb's close.
//! - `sim` (tests, or the `sim` feature): the simulated disk.
//! - `power_loss` (tests): the seeded power-loss simulation over a node on the simulated disk.
//!
//! Replica streaming, SHOW BINLOG EVENTS and the repair tool read binlog files through `std::fs` directly: they
//! only read what the writer made durable, and they never run on a simulated disk. The relay log (scratch space
//! discarded at every connection start, never fsynced) is on the layer, so that the replica simulation keeps
//! it on the simulated disk with the replica's binlog and store.

pub mod fence;
#[cfg(test)]
mod power_loss;
#[cfg(any(test, feature = "sim"))]
pub mod sim;

use std::fmt::Debug;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// An open file: read, write and seek like a `std::fs::File`, plus what durability needs.
pub trait FsFile: Read + Write + Seek + Send + Sync {
    /// `fdatasync`: the file's bytes (and its size) are durable when it returns.
    fn sync_data(&mut self) -> io::Result<()>;
    /// `fsync`: as [`FsFile::sync_data`], with all metadata.
    fn sync_all(&mut self) -> io::Result<()>;
    /// Truncates or extends (with zeros) to `len` bytes.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// The file's length now.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// The file-system operations of the binlog, the index, the high-water mark and the store.
///
/// A created file, a rename and a removal are durable only once their directory is synced
/// ([`Fs::sync_dir`]), as on a real file system; [`Fs::create_dir_all`] syncs the parent of every directory it
/// creates.
pub trait Fs: Debug + Send + Sync {
    /// Opens an existing file for reading.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens an existing file for writing (not truncated; positioned at its start).
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Creates a file for writing, truncating it when it exists.
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Renames a file (replacing `to` when it exists).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// The names of the entries of a directory.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>>;
    fn exists(&self, path: &Path) -> bool;
    /// Creates a directory and its missing parents, each made durable in its parent.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// fsyncs a directory: the creations, renames and removals of its entries are durable when it returns.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// The store's redb backend for the file at `path`, when the store is not to open it with `std::fs`.
    fn store_backend(&self, _path: &Path) -> io::Result<Option<Box<dyn redb::StorageBackend>>> {
        Ok(None)
    }

    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open_read(path)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// A file's length.
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        self.open_read(path)?.len()
    }

    /// When a file was last modified (binlog expiry by age); unsupported unless the layer keeps the time.
    fn modified(&self, _path: &Path) -> io::Result<std::time::SystemTime> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "this file layer keeps no modification times"))
    }
}

/// The real file system: every call goes straight to `std::fs`.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

/// The shared handle on the real file system.
pub fn real() -> Arc<dyn Fs> {
    static REAL: OnceLock<Arc<dyn Fs>> = OnceLock::new();
    REAL.get_or_init(|| Arc::new(RealFs)).clone()
}

impl FsFile for std::fs::File {
    fn sync_data(&mut self) -> io::Result<()> {
        std::fs::File::sync_data(self)
    }

    fn sync_all(&mut self) -> io::Result<()> {
        std::fs::File::sync_all(self)
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        std::fs::File::set_len(self, len)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl Fs for RealFs {
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(std::fs::File::open(path)?))
    }

    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(std::fs::OpenOptions::new().write(true).open(path)?))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(path)?))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        std::fs::read_dir(dir)?.map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned())).collect()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let missing = missing_dirs(dir, |d| d.is_dir());
        std::fs::create_dir_all(dir)?;
        for created in missing.iter().rev() {
            self.sync_dir(parent_dir(created))?;
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }

    fn modified(&self, path: &Path) -> io::Result<std::time::SystemTime> {
        std::fs::metadata(path)?.modified()
    }
}

/// `dir` and those of its ancestors that do not exist yet, deepest first.
fn missing_dirs(dir: &Path, exists: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !exists(d)) {
        missing.push(d.to_path_buf());
        at = d.parent();
    }
    missing
}

/// The directory a path's entry lives in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

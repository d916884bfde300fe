//! The durable read-only flag: `read-only.json` in the data directory (`{"read_only": true}`), replaced atomically
//! (temporary file, fsync, rename, fsync of the directory) whenever the operator turns read-only on or off, and
//! read when the node opens, so a read-only replica restarted with any command line comes back read-only.
//!
//! A missing file means the node never had its read-only state set (its first start): the caller decides from the
//! command line and the replication settings. A file that does not parse is damage (it is only ever replaced
//! whole): the node opens read-only and says so, rather than guessing writable.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::vfs::Fs;

/// The flag file's name, in the data directory.
pub const READ_ONLY_FILE: &str = "read-only.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Flag {
    read_only: bool,
}

/// What the data directory says about read-only at open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurableReadOnly {
    /// No flag was ever written.
    Unset,
    /// The flag as last written.
    Set(bool),
    /// The file is there but is not a flag: the node opens read-only (the reason is logged and shown in status).
    Damaged(String),
}

impl DurableReadOnly {
    /// The state to start in when the file decides it; None when it is unset.
    pub fn decided(&self) -> Option<bool> {
        match self {
            DurableReadOnly::Unset => None,
            DurableReadOnly::Set(on) => Some(*on),
            DurableReadOnly::Damaged(_) => Some(true),
        }
    }

    /// Whether a node starts read-only: as the flag says once it was ever set (whatever the command line); on a
    /// first start, read-only when the command line asks for it (`read_only_flag`) or when the node has a
    /// replication connection configured (`replicates`) — a replica never starts writable by default.
    pub fn at_start(&self, read_only_flag: bool, replicates: bool) -> bool {
        self.decided().unwrap_or(read_only_flag || replicates)
    }
}

fn flag_path(dir: &Path) -> PathBuf {
    dir.join(READ_ONLY_FILE)
}

/// Reads the flag of the data directory `dir`.
pub fn read_on(fs: &dyn Fs, dir: &Path) -> io::Result<DurableReadOnly> {
    let path = flag_path(dir);
    match fs.read(&path) {
        Ok(bytes) => Ok(match serde_json::from_slice::<Flag>(&bytes) {
            Ok(flag) => DurableReadOnly::Set(flag.read_only),
            Err(e) => DurableReadOnly::Damaged(format!(
                "{} is not a read-only flag ({e}); it is only ever replaced whole, so this is damage: the node \
                 starts read-only; set read-only through the admin API to rewrite it",
                path.display()
            )),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(DurableReadOnly::Unset),
        Err(e) => Err(e),
    }
}

/// Records `read_only` durably: once this returns, a crash at any point leaves the file saying it.
pub fn write_on(fs: &dyn Fs, dir: &Path, read_only: bool) -> io::Result<()> {
    let path = flag_path(dir);
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_vec(&Flag { read_only }).expect("a flag serializes");
    let mut f = fs.create(&tmp)?;
    f.write_all(&text)?;
    f.sync_all()?;
    drop(f);
    fs.rename(&tmp, &path)?;
    fs.sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::sim::SimFs;

    const DIR: &str = "/node";

    #[test]
    fn a_directory_without_the_file_is_unset() {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new(DIR)).unwrap();
        assert_eq!(read_on(&fs, Path::new(DIR)).unwrap(), DurableReadOnly::Unset);
        assert_eq!(DurableReadOnly::Unset.decided(), None);
    }

    #[test]
    fn the_flag_once_set_wins_over_the_command_line_and_a_first_start_follows_it() {
        use DurableReadOnly::*;
        // (flag, --read-only, replicates) → read-only at start
        let cases = [
            (Set(true), false, false, true),
            (Set(true), false, true, true),
            (Set(false), true, true, false),
            (Set(false), false, true, false),
            (Damaged("x".into()), false, false, true),
            (Unset, false, false, false),
            (Unset, true, false, true),
            (Unset, false, true, true),
        ];
        for (flag, cli, replicates, want) in cases {
            assert_eq!(flag.at_start(cli, replicates), want, "{flag:?} --read-only={cli} replicates={replicates}");
        }
    }

    #[test]
    fn the_last_value_written_is_read_back() {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new(DIR)).unwrap();
        for on in [true, false, true] {
            write_on(&fs, Path::new(DIR), on).unwrap();
            assert_eq!(read_on(&fs, Path::new(DIR)).unwrap(), DurableReadOnly::Set(on));
        }
    }

    #[test]
    fn a_damaged_file_decides_read_only_and_says_why() {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new(DIR)).unwrap();
        let mut f = fs.create(&flag_path(Path::new(DIR))).unwrap();
        f.write_all(b"{\"read_only\": mayb").unwrap();
        drop(f);
        let got = read_on(&fs, Path::new(DIR)).unwrap();
        assert_eq!(got.decided(), Some(true));
        match got {
            DurableReadOnly::Damaged(why) => assert!(why.contains(READ_ONLY_FILE), "{why}"),
            other => panic!("expected damage, got {other:?}"),
        }
    }

    /// The power goes at every I/O operation of a write that flips the flag: what survives is the old value or
    /// the new one (never damage, never unset once set), and the new one once the write returned.
    #[test]
    fn a_crash_during_a_write_leaves_the_old_or_the_new_value() {
        let probe = SimFs::new();
        probe.create_dir_all(Path::new(DIR)).unwrap();
        write_on(&probe, Path::new(DIR), true).unwrap();
        let before = probe.ops();
        write_on(&probe, Path::new(DIR), false).unwrap();
        let ops = probe.ops() - before;
        assert!(ops > 0);
        for crash_at in 0..=ops {
            for seed in 0..4 {
                let fs = SimFs::new();
                fs.create_dir_all(Path::new(DIR)).unwrap();
                write_on(&fs, Path::new(DIR), true).unwrap();
                let start = fs.ops();
                fs.crash_at(start + crash_at, seed);
                let finished = write_on(&fs, Path::new(DIR), false).is_ok() && !fs.crashed();
                let after = fs.after_crash().unwrap_or(fs);
                let got = read_on(&after, Path::new(DIR)).unwrap();
                if finished {
                    assert_eq!(got, DurableReadOnly::Set(false), "crash_at {crash_at} seed {seed}");
                } else {
                    assert!(
                        matches!(got, DurableReadOnly::Set(_)),
                        "crash_at {crash_at} seed {seed}: {got:?} after a crash inside the write"
                    );
                }
            }
        }
    }
}

//! The repair path for a corrupt binlog: `--verify` finds the damage in every file (file, offset, the GTIDs
//! around it, and the cut that would remove it); `--truncate-at OFFSET --i-know FILE` makes that cut in the
//! index's last file, after raising the seq_no high-water mark so the cut seq_nos are never handed out again.
//!
//! A node repairs a torn last write itself at start-up; only damage before it needs this (see docs/operations.md,
//! "A corrupt binlog").

use std::io::Write;
use std::path::Path;

use ferry_core::binlog::event::Event;
use ferry_core::binlog::reader::{FileReader, Item, TransactionReader};
use ferry_core::binlog::writer::{inspect_file, Damage};
use ferry_core::binlog::{files_at, hwm, read_index, BinlogError};
use ferry_core::Gtid;

/// What `--verify` found.
pub enum Verdict {
    /// Every file reads whole.
    Clean,
    /// Only the last file's last write is torn: the node trims it itself at start-up.
    TornTail,
    /// Corruption: the node refuses to start until it is repaired.
    Corrupt,
}

/// Checks every event of every file; prints one line per file (and one per damage) to `out`.
pub fn verify(dir: &Path, out: &mut impl Write) -> Result<Verdict, BinlogError> {
    let files = files_at(dir)?;
    let mut verdict = Verdict::Clean;
    for (i, path) in files.iter().enumerate() {
        let last = i + 1 == files.len();
        let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        let Some(damage) = inspect_file(path)? else {
            let _ = writeln!(out, "{name}: ok ({} bytes)", std::fs::metadata(path).map_or(0, |m| m.len()));
            continue;
        };
        let torn = last && damage.torn_tail;
        let _ = writeln!(out, "{}", describe(&damage, torn));
        verdict = match (verdict, torn) {
            (Verdict::Corrupt, _) | (_, false) => Verdict::Corrupt,
            (_, true) => Verdict::TornTail,
        };
    }
    Ok(verdict)
}

fn describe(d: &Damage, torn: bool) -> String {
    let lost = d.file_bytes - d.whole_end;
    let gtids = list(&d.gtids_after);
    if torn {
        return format!(
            "{}: torn last write at offset {} ({}): the node trims it at start-up ({lost} bytes from offset {}, \
             never acknowledged; readable GTIDs in it: {gtids})",
            d.file, d.offset, d.reason, d.whole_end
        );
    }
    format!(
        "{}: CORRUPT at offset {} ({}); {}; `--truncate-at {} --i-know` would cut {lost} bytes, with every \
         transaction from there to the end of the file (readable GTIDs: {gtids})",
        d.file,
        d.offset,
        d.reason,
        d.gtid_range(),
        d.whole_end
    )
}

fn list(gtids: &[Gtid]) -> String {
    if gtids.is_empty() {
        return "none".into();
    }
    gtids.iter().map(Gtid::to_string).collect::<Vec<_>>().join(",")
}

/// Cuts `file` (the last file of its directory's index) at `offset`, the end of a whole transaction before
/// any damage. Without `i_know` it only says what the cut would lose. Returns what it printed.
pub fn truncate(file: &Path, offset: u64, i_know: bool, out: &mut impl Write) -> Result<bool, String> {
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).ok_or("--truncate-at needs a file")?;
    let index = read_index(dir).map_err(|e| e.to_string())?;
    if index.last() != Some(&name) {
        return Err(format!(
            "{name} is not the last file of {}'s index ({}): only the last file can be cut; damage in an older \
             file means restoring the binlog from a backup, or rebuilding the node from a replica",
            dir.display(),
            index.last().map_or("empty", String::as_str)
        ));
    }
    let len = std::fs::metadata(file).map_err(|e| format!("{}: {e}", file.display()))?.len();
    // Where a cut may go: the end of the header or of any whole item, up to the damage.
    let mut boundaries = Vec::new();
    let mut server_id = None;
    let mut items = TransactionReader::new(FileReader::open(file).map_err(|e| e.to_string())?);
    let mut kept_gtids = Vec::new();
    for item in items.by_ref() {
        match item {
            Ok(Item::Transaction(t)) => {
                boundaries.push(t.end_offset);
                kept_gtids.push((t.end_offset, t.gtid()));
            }
            Ok(Item::Other(ev)) => {
                if let Event::FormatDescription(fd) = &ev.event {
                    server_id = Some(fd.server_id);
                }
                if let Event::Rotate { .. } = &ev.event {
                    return Err(format!("{name} was closed by a rotation: it is not being written, nothing to cut"));
                }
                boundaries.push(ev.offset + ev.len);
            }
            Err(_) => break,
        }
    }
    let first_ok = boundaries.iter().copied().find(|b| *b > 4).unwrap_or(0);
    if !boundaries.contains(&offset) || offset < first_ok {
        return Err(format!(
            "offset {offset} is not the end of a whole transaction in {name} before any damage (the header ends \
             at {first_ok}; `ferry-binlog --verify` names the offset to cut at)"
        ));
    }
    let damage = inspect_file(file).map_err(|e| e.to_string())?;
    let mut lost: Vec<Gtid> = kept_gtids.iter().filter(|(end, _)| *end > offset).map(|(_, g)| *g).collect();
    lost.extend(damage.iter().flat_map(|d| d.gtids_after.iter().copied()));
    let _ = writeln!(
        out,
        "cutting {name} at offset {offset} loses {} bytes and these transactions (readable GTIDs): {}",
        len - offset,
        list(&lost)
    );
    if !i_know {
        let _ =
            writeln!(out, "nothing was changed: add --i-know to cut (see docs/operations.md, \"A corrupt binlog\")");
        return Ok(false);
    }
    // The cut seq_nos of this server may have been seen by clients and replicas: never hand them out again.
    let own: Vec<Gtid> = lost.iter().copied().filter(|g| Some(g.server) == server_id).collect();
    let marks = hwm::raise(dir, own).map_err(|e| e.to_string())?;
    let f = std::fs::OpenOptions::new().write(true).open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    f.set_len(offset).and_then(|_| f.sync_all()).map_err(|e| format!("cutting {}: {e}", file.display()))?;
    let _ = writeln!(
        out,
        "cut {name} at offset {offset}; seq_no high-water mark ({}) now {}",
        hwm::HWM_FILE,
        marks.iter().map(|(d, s)| format!("{d}:{s}")).collect::<Vec<_>>().join(",")
    );
    Ok(true)
}

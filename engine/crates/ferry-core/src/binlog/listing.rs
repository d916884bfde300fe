//! SHOW BINLOG EVENTS: the events of one binlog file from a byte offset, one row per event with MariaDB's
//! columns (`Log_name`, `Pos`, `Event_type`, `Server_id`, `End_log_pos`, `Info`), paged by `End_log_pos`.
//!
//! An offset must be an event boundary: one inside an event is refused naming the boundaries around it, as a
//! DBA paging by `End_log_pos` never lands inside one.

use std::path::Path;

use serde::Serialize;

use crate::binlog::event::Event;
use crate::binlog::reader::{FileReader, ReadEvent};
use crate::binlog::{BinlogError, MAGIC};
use crate::gtid::{Gtid, ServerId};

/// One event of a listing.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventRow {
    pub log_name: String,
    /// Offset of the event in the file.
    pub pos: u64,
    pub event_type: &'static str,
    /// The GTID's server for a transaction's events, the file's writer for the others.
    pub server_id: ServerId,
    /// Offset just past the event: where the next page starts.
    pub end_log_pos: u64,
    /// What the event says, as MariaDB's `Info` (a GTID event: `BEGIN GTID d-s-n cid=c`).
    pub info: String,
    /// The transaction the event belongs to (GTID, rows and commit events).
    pub gtid: Option<String>,
}

/// Which events of a file to list.
#[derive(Debug, Clone, Copy)]
pub struct ListingRequest {
    /// Byte offset of the first event (the file's first event when None).
    pub from: Option<u64>,
    /// Events to pass over before the first listed (`LIMIT skip, limit`).
    pub skip: usize,
    pub limit: usize,
    /// End of what is complete in the file (the current file is being written); the whole file when None.
    pub end: Option<u64>,
}

/// Why a listing cannot be given.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    #[error("{file:?} is not a binlog file of this node (see the status's binlog_files)")]
    NoSuchFile { file: String },
    #[error("offset {offset} of {file} is not at an event boundary: the event around it starts at {before} and the next one at {after}")]
    NotABoundary { file: String, offset: u64, before: u64, after: u64 },
    #[error("offset {offset} is past the end of {file} ({end} bytes)")]
    PastEnd { file: String, offset: u64, end: u64 },
    #[error(transparent)]
    Binlog(#[from] BinlogError),
}

/// Lists the events of the binlog file at `path` as `request` says.
pub fn list_events(path: &Path, request: ListingRequest) -> Result<Vec<EventRow>, ListingError> {
    let mut reader = FileReader::open(path)?;
    let file = reader.name().to_string();
    let end = match request.end {
        Some(end) => end,
        None => std::fs::metadata(path).map_err(|e| BinlogError::io(path, e))?.len(),
    };
    let from = request.from.unwrap_or(MAGIC.len() as u64);
    if from > end {
        return Err(ListingError::PastEnd { file, offset: from, end });
    }
    if from < reader.offset() {
        return Err(ListingError::NotABoundary { file, offset: from, before: 0, after: reader.offset() });
    }
    let mut writer: ServerId = 0;
    let mut gtid: Option<Gtid> = None;
    let mut rows = Vec::new();
    let mut skipped = 0usize;
    // One event in memory at a time (the reader's buffer): events before `from` and skipped ones are dropped as
    // soon as read, so neither `from` nor `skip` makes the listing hold more than the rows it returns.
    while reader.offset() < end && rows.len() < request.limit {
        let at = reader.offset();
        let Some(read) = reader.next_event() else { break };
        let read = read?;
        let next = read.offset + read.len;
        if from > at && from < next {
            return Err(ListingError::NotABoundary { file, offset: from, before: at, after: next });
        }
        match &read.event {
            Event::FormatDescription(fd) => writer = fd.server_id,
            Event::Gtid(g) => gtid = Some(g.gtid),
            _ => {}
        }
        if at >= from {
            if skipped < request.skip {
                skipped += 1;
            } else {
                rows.push(row_of(&read, writer, gtid));
            }
        }
        if matches!(read.event, Event::Commit { .. }) {
            gtid = None;
        }
    }
    Ok(rows)
}

fn row_of(read: &ReadEvent, writer: ServerId, gtid: Option<Gtid>) -> EventRow {
    let in_txn = matches!(read.event, Event::Gtid(_) | Event::Rows { .. } | Event::Commit { .. });
    let gtid = gtid.filter(|_| in_txn);
    EventRow {
        log_name: read.file.clone(),
        pos: read.offset,
        event_type: read.event.type_name(),
        server_id: gtid.map_or(writer, |g| g.server),
        end_log_pos: read.offset + read.len,
        info: info(&read.event),
        gtid: gtid.map(|g| g.to_string()),
    }
}

/// The `Info` column.
pub fn info(event: &Event) -> String {
    match event {
        Event::FormatDescription(fd) => {
            format!("Server ver: {}, Binlog ver: {}", fd.server_version, fd.binlog_version)
        }
        Event::GtidList { gtids } => {
            format!("[{}]", gtids.iter().map(Gtid::to_string).collect::<Vec<_>>().join(","))
        }
        Event::Gtid(g) => format!("BEGIN GTID {} cid={}", g.gtid, g.commit_id),
        Event::Rows { changes } => {
            let mut tables: Vec<(&str, usize)> = Vec::new();
            for c in changes {
                match tables.last_mut() {
                    Some((t, n)) if *t == c.table => *n += 1,
                    _ => tables.push((&c.table, 1)),
                }
            }
            let parts: Vec<String> =
                tables.iter().map(|(t, n)| format!("table {t}: {n} row{}", if *n == 1 { "" } else { "s" })).collect();
            parts.join("; ")
        }
        Event::Commit { changes } => format!("COMMIT /* {changes} row changes */"),
        Event::Checkpoint(c) => format!("store durable through {}:{}", c.file, c.offset),
        Event::Rotate { next_file } => format!("{next_file};pos={}", MAGIC.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binlog::event::{encode_event, GtidEvent};
    use crate::binlog::file_name;
    use crate::binlog::writer::BinlogWriter;
    use crate::row::RowChange;

    fn txn(gtid: Gtid) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_event(&Event::Gtid(GtidEvent { gtid, commit_id: 7, flags: 0, commit_ts_us: 0 }), &mut buf);
        let change = |key: &str| RowChange { table: "t".into(), key: key.into(), before: None, after: None };
        encode_event(&Event::Rows { changes: vec![change("a"), change("b")] }, &mut buf);
        encode_event(&Event::Commit { changes: 2 }, &mut buf);
        buf
    }

    fn binlog() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = BinlogWriter::open(dir.path(), 3, 1 << 20).unwrap();
        for seq in 1..=2 {
            w.append(&txn(Gtid::new(0, 9, seq))).unwrap();
            w.record(Gtid::new(0, 9, seq));
        }
        w.sync().unwrap();
        let path = dir.path().join(file_name(1));
        (dir, path)
    }

    fn all() -> ListingRequest {
        ListingRequest { from: None, skip: 0, limit: 100, end: None }
    }

    #[test]
    fn a_file_lists_every_event_with_mariadbs_columns() {
        let (_dir, path) = binlog();
        let rows = list_events(&path, all()).unwrap();
        let types: Vec<&str> = rows.iter().map(|r| r.event_type).collect();
        assert_eq!(types, ["format_description", "gtid_list", "gtid", "rows", "commit", "gtid", "rows", "commit"]);
        assert_eq!(rows[0].pos, 4);
        assert_eq!(rows[0].server_id, 3, "the file's writer");
        assert!(rows[0].info.starts_with("Server ver: ferryd"), "{}", rows[0].info);
        assert_eq!(rows[2].info, "BEGIN GTID 0-9-1 cid=7");
        assert_eq!(rows[2].server_id, 9, "the GTID's server");
        assert_eq!(rows[3].info, "table t: 2 rows");
        assert_eq!(rows[3].gtid.as_deref(), Some("0-9-1"));
        assert_eq!(rows[5].gtid.as_deref(), Some("0-9-2"));
        assert_eq!(rows[1].gtid, None);
        for pair in rows.windows(2) {
            assert_eq!(pair[0].end_log_pos, pair[1].pos, "rows are contiguous");
        }
    }

    #[test]
    fn pages_follow_end_log_pos_and_skip_counts_events() {
        let (_dir, path) = binlog();
        let every = list_events(&path, all()).unwrap();
        let first = list_events(&path, ListingRequest { limit: 3, ..all() }).unwrap();
        assert_eq!(first, every[..3]);
        let next = list_events(&path, ListingRequest { from: Some(first[2].end_log_pos), limit: 3, ..all() }).unwrap();
        assert_eq!(next, every[3..6]);
        let skipped = list_events(&path, ListingRequest { skip: 2, limit: 2, ..all() }).unwrap();
        assert_eq!(skipped, every[2..4]);
        let bounded = list_events(&path, ListingRequest { end: Some(every[5].pos), ..all() }).unwrap();
        assert_eq!(bounded, every[..5], "nothing past the end given");
        let at_end = list_events(&path, ListingRequest { from: Some(every[7].end_log_pos), ..all() }).unwrap();
        assert!(at_end.is_empty());
    }

    #[test]
    fn an_offset_inside_an_event_or_past_the_end_is_refused() {
        let (_dir, path) = binlog();
        let every = list_events(&path, all()).unwrap();
        let inside = every[3].pos + 1;
        let err = list_events(&path, ListingRequest { from: Some(inside), ..all() }).unwrap_err();
        assert!(
            matches!(err, ListingError::NotABoundary { before, after, .. } if before == every[3].pos && after == every[3].end_log_pos),
            "{err}"
        );
        let err = list_events(&path, ListingRequest { from: Some(1), ..all() }).unwrap_err();
        assert!(matches!(err, ListingError::NotABoundary { .. }), "{err}");
        let err = list_events(&path, ListingRequest { from: Some(1 << 30), ..all() }).unwrap_err();
        assert!(err.to_string().contains("past the end"), "{err}");
    }
}

//! Binlog events and transactions as Python dicts.
//!
//! Every event dict has `file`, `offset`, `len` and `type` (the core's snake_case name), then the event's
//! fields. GTIDs are `d-s-n` strings; a GTID event's fields are the same as a transaction's header
//! (`gtid`, `domain`, `server_id`, `seq_no`, `commit_id`, `flags`, `commit_ts_us`). A checkpoint's own
//! coordinate is `checkpoint_file` / `checkpoint_offset`, so it does not collide with where the event sits.
//! Row images are dicts of field name to `int` or `str`, or None when the row is absent.

use ferry_core::binlog::event::{Event, GtidEvent};
use ferry_core::binlog::reader::{ReadEvent, Transaction};
use ferry_core::row::{Row, RowChange, Value};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

fn row_dict<'py>(py: Python<'py>, row: &Row) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (field, value) in row {
        match value {
            Value::Int(i) => d.set_item(field, i)?,
            Value::Text(t) => d.set_item(field, t)?,
        }
    }
    Ok(d)
}

fn image<'py>(py: Python<'py>, row: Option<&Row>) -> PyResult<Bound<'py, PyAny>> {
    match row {
        Some(row) => Ok(row_dict(py, row)?.into_any()),
        None => Ok(py.None().into_bound(py)),
    }
}

fn changes_list<'py>(py: Python<'py>, changes: &[RowChange]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for c in changes {
        let d = PyDict::new(py);
        d.set_item("table", &c.table)?;
        d.set_item("key", &c.key)?;
        d.set_item("before", image(py, c.before.as_ref())?)?;
        d.set_item("after", image(py, c.after.as_ref())?)?;
        list.append(d)?;
    }
    Ok(list)
}

fn put_gtid_header(d: &Bound<'_, PyDict>, g: &GtidEvent) -> PyResult<()> {
    d.set_item("gtid", g.gtid.to_string())?;
    d.set_item("domain", g.gtid.domain)?;
    d.set_item("server_id", g.gtid.server)?;
    d.set_item("seq_no", g.gtid.seq)?;
    d.set_item("commit_id", g.commit_id)?;
    d.set_item("flags", g.flags)?;
    d.set_item("commit_ts_us", g.commit_ts_us)
}

/// `{"file", "offset", "len", "type", …fields}` for one event.
pub fn event_dict<'py>(py: Python<'py>, ev: &ReadEvent) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("file", &ev.file)?;
    d.set_item("offset", ev.offset)?;
    d.set_item("len", ev.len)?;
    d.set_item("type", ev.event.type_name())?;
    match &ev.event {
        Event::FormatDescription(fd) => {
            d.set_item("binlog_version", fd.binlog_version)?;
            d.set_item("server_id", fd.server_id)?;
            d.set_item("created_at_us", fd.created_at_us)?;
            d.set_item("server_version", &fd.server_version)?;
        }
        Event::GtidList { gtids } => {
            d.set_item("gtids", gtids.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        }
        Event::Gtid(g) => put_gtid_header(&d, g)?,
        Event::Rows { changes } => d.set_item("changes", changes_list(py, changes)?)?,
        Event::Commit { changes } => d.set_item("changes", changes)?,
        Event::Checkpoint(c) => {
            d.set_item("checkpoint_file", &c.file)?;
            d.set_item("checkpoint_offset", c.offset)?;
        }
        Event::Rotate { next_file } => d.set_item("next_file", next_file)?,
    }
    Ok(d)
}

/// `{"file", "offset", "end_offset", "gtid", "domain", "server_id", "seq_no", "commit_id", "flags",
/// "commit_ts_us", "changes": [{"table", "key", "before", "after"}]}` for one transaction.
pub fn transaction_dict<'py>(py: Python<'py>, txn: &Transaction) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("file", &txn.file)?;
    d.set_item("offset", txn.offset)?;
    d.set_item("end_offset", txn.end_offset)?;
    put_gtid_header(&d, &txn.header)?;
    d.set_item("changes", changes_list(py, &txn.changes)?)?;
    Ok(d)
}

//! `decode_transaction`: one committed transaction as a change consumer receives it (the events of a `ReplTxn`
//! frame), checked and decoded by `ferry_client::decode_transaction` — every event's checksum, a GTID event first,
//! row events, a commit event last whose count matches — into a dict a Python subscription hands out.

use ferry_core::row::{Row, Value};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

fn row<'py>(py: Python<'py>, row: &Row) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (field, value) in row {
        match value {
            Value::Int(n) => out.set_item(field, n)?,
            Value::Text(t) => out.set_item(field, t)?,
        }
    }
    Ok(out)
}

/// Checks and decodes a transaction's events as a node sent them: `file` and `end_offset` say where it ends in
/// the node's binlog. Returns `{"gtid", "domain", "server", "seq", "commit_id", "commit_ts_us", "flags",
/// "changes": [{"table", "key", "before", "after"}]}` (a row image is a dict of its fields, or None: no row).
/// Bytes that are not one whole transaction raise `ValueError` saying what is wrong and where.
#[pyfunction]
pub fn decode_transaction<'py>(
    py: Python<'py>,
    file: &str,
    end_offset: u64,
    events: &[u8],
) -> PyResult<Bound<'py, PyDict>> {
    let change = ferry_client::decode_transaction(file, end_offset, events)
        .map_err(|why| PyValueError::new_err(format!("a bad transaction ending at {file}:{end_offset}: {why}")))?;
    let out = PyDict::new(py);
    out.set_item("gtid", change.gtid.to_string())?;
    out.set_item("domain", change.gtid.domain)?;
    out.set_item("server", change.gtid.server)?;
    out.set_item("seq", change.gtid.seq)?;
    out.set_item("commit_id", change.commit_id)?;
    out.set_item("commit_ts_us", change.commit_ts_us)?;
    out.set_item("flags", change.flags)?;
    let changes = PyList::empty(py);
    for c in &change.changes {
        let item = PyDict::new(py);
        item.set_item("table", &c.table)?;
        item.set_item("key", &c.key)?;
        item.set_item("before", c.before.as_ref().map(|r| row(py, r)).transpose()?)?;
        item.set_item("after", c.after.as_ref().map(|r| row(py, r)).transpose()?)?;
        changes.append(item)?;
    }
    out.set_item("changes", changes)?;
    Ok(out)
}

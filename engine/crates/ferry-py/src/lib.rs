//! `ferry_engine`: Python bindings for Ferry's core — GTID and position math, and binlog reading.
//!
//! - [`gtid`]: the `Gtid` class (one transaction id) and `parse_gtid`.
//! - [`position`]: the `GtidPosition` class (one GTID per domain), `parse_position` and `format_position`.
//! - [`binlog`]: `read_binlog`, a lazy iterator over a binlog file or directory, by event or by transaction.
//! - [`events`]: how events and transactions become Python dicts.
//! - [`errors`]: the module's exceptions and how core errors map onto Python's.
//!
//! Every parse, comparison and read is done by `ferry-core`; this crate only converts.

mod binlog;
mod errors;
mod events;
mod gtid;
mod position;

use pyo3::prelude::*;

#[pymodule]
fn ferry_engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("GtidParseError", py.get_type::<errors::GtidParseError>())?;
    m.add("BinlogCorruptError", py.get_type::<errors::BinlogCorruptError>())?;
    m.add_class::<gtid::PyGtid>()?;
    m.add_class::<position::PyGtidPosition>()?;
    m.add_class::<binlog::BinlogReader>()?;
    m.add_function(wrap_pyfunction!(gtid::parse_gtid, m)?)?;
    m.add_function(wrap_pyfunction!(position::parse_position, m)?)?;
    m.add_function(wrap_pyfunction!(position::format_position, m)?)?;
    m.add_function(wrap_pyfunction!(binlog::read_binlog, m)?)?;
    Ok(())
}

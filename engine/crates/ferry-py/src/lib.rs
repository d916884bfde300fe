//! `ferry_engine`: Python bindings for Ferry's core — GTID and position math, the binary protocol's constants, and
//! the check and decoding of a change consumer's transactions.
//!
//! - [`gtid`]: the `Gtid` class (one transaction id) and `parse_gtid`.
//! - [`position`]: the `GtidPosition` class (one GTID per domain), `parse_position` and `format_position`.
//! - [`protocol`]: `PROTOCOL_VERSION`, `OPCODES`, `ERROR_CODES`, `ROW_OP_KINDS`, `VALUE_TYPES` (the node's protocol).
//! - [`change`]: `decode_transaction` (a `ReplTxn` frame's events, checked, as a dict of its GTID and row images).
//! - [`errors`]: the module's exception and how core errors map onto it.
//!
//! Every parse and comparison is done by `ferry-core`, and every constant is ferry-core's; this crate only converts.
//! (The control plane reads binlogs only through its servers — SHOW BINLOG EVENTS, a node's /v1/binlog/events —
//! so the module has no binlog file reader.)

mod change;
mod errors;
mod gtid;
mod position;
mod protocol;

use pyo3::prelude::*;

#[pymodule]
fn ferry_engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("GtidParseError", py.get_type::<errors::GtidParseError>())?;
    m.add_class::<gtid::PyGtid>()?;
    m.add_class::<position::PyGtidPosition>()?;
    m.add_function(wrap_pyfunction!(gtid::parse_gtid, m)?)?;
    m.add_function(wrap_pyfunction!(position::parse_position, m)?)?;
    m.add_function(wrap_pyfunction!(position::format_position, m)?)?;
    m.add_function(wrap_pyfunction!(change::decode_transaction, m)?)?;
    protocol::add(m)?;
    Ok(())
}

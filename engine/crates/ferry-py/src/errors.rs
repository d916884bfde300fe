//! The module's exception and the mapping of the core's GTID parse errors onto it.
//!
//! - `GtidParseError(ValueError)`: bad GTID or position text; carries `text`, `column` (1-based), `reason`
//!   and `pointer` (the text with a caret under the column), and its message is the core's.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pyo3::create_exception!(
    ferry_engine,
    GtidParseError,
    PyValueError,
    "GTID or position text was rejected; `column` (1-based) points at the offending character."
);

/// A `GtidParseError` carrying the core error's text, column, reason and caret pointer.
pub fn gtid_parse_error(py: Python<'_>, e: &ferry_core::GtidParseError) -> PyErr {
    let err = GtidParseError::new_err(e.to_string());
    let value = err.value(py);
    let attrs = value
        .setattr("text", &e.text)
        .and_then(|()| value.setattr("column", e.column))
        .and_then(|()| value.setattr("reason", &e.reason))
        .and_then(|()| value.setattr("pointer", e.pointer()));
    match attrs {
        Ok(()) => err,
        Err(failed) => failed,
    }
}

//! The module's exceptions and the mapping of core errors onto Python exceptions.
//!
//! - `GtidParseError(ValueError)`: bad GTID or position text; carries `text`, `column` (1-based), `reason`
//!   and `pointer` (the text with a caret under the column), and its message is the core's.
//! - `BinlogCorruptError(ValueError)`: bytes that are not a valid binlog (bad magic, checksum, framing, a
//!   torn or misplaced event); carries `file` (the file name), `offset` (of the damaged event) and `reason`.
//! - I/O failures become `OSError` with errno and filename, so a missing path is a `FileNotFoundError`.

use ferry_core::binlog::BinlogError;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    ferry_engine,
    GtidParseError,
    PyValueError,
    "GTID or position text was rejected; `column` (1-based) points at the offending character."
);

pyo3::create_exception!(
    ferry_engine,
    BinlogCorruptError,
    PyValueError,
    "A binlog file holds bytes that are not a valid event where one should be; `file` and `offset` say where."
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

fn corrupt(py: Python<'_>, message: String, file: &str, offset: u64, reason: String) -> PyErr {
    let err = BinlogCorruptError::new_err(message);
    let value = err.value(py);
    let attrs = value
        .setattr("file", file)
        .and_then(|()| value.setattr("offset", offset))
        .and_then(|()| value.setattr("reason", reason));
    match attrs {
        Ok(()) => err,
        Err(failed) => failed,
    }
}

/// Maps a core binlog error: corruption to `BinlogCorruptError`, I/O to `OSError` (its errno picks the
/// subclass, e.g. `FileNotFoundError`), anything else to `ValueError`.
pub fn binlog_error(py: Python<'_>, e: BinlogError) -> PyErr {
    let message = e.to_string();
    match e {
        BinlogError::Io { path, source } => match source.raw_os_error() {
            Some(errno) => {
                let text = source.to_string();
                let strerror = text.split(" (os error").next().unwrap_or(&text).to_string();
                PyOSError::new_err((errno, strerror, path.display().to_string()))
            }
            None => PyOSError::new_err(message),
        },
        BinlogError::Corrupt { file, offset, reason } => corrupt(py, message, &file, offset, reason.to_string()),
        BinlogError::CorruptBeforeTail { file, offset, reason, .. } => corrupt(py, message, &file, offset, reason),
        BinlogError::NotABinlog { file } => corrupt(py, message, &file, 0, "bad magic bytes".into()),
        BinlogError::OutOfPlace { file, offset, found, expected } => {
            corrupt(py, message, &file, offset, format!("unexpected {found} event: {expected}"))
        }
        BinlogError::Missing { .. } | BinlogError::Invalid(_) => PyValueError::new_err(message),
    }
}

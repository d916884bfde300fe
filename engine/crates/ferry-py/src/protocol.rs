//! The binary protocol's constants as ferry-core defines them, for Python clients of a node: the protocol
//! version, the opcodes, the error codes and their names, and the tags of row operations and field values.
//!
//! Exported as plain module attributes (ints and dicts), so a Python client never copies them by hand.

use ferry_core::protocol::{op, ErrorCode, PROTOCOL_VERSION};
use ferry_core::row::{OP_DELETE, OP_INCREMENT, OP_PUT, VALUE_INT, VALUE_TEXT};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Request and response opcodes by name (`R_…` for responses).
const OPCODES: [(&str, u8); 28] = [
    ("HELLO", op::HELLO),
    ("AUTH", op::AUTH),
    ("TRANSACT", op::TRANSACT),
    ("GET", op::GET),
    ("WAIT_POSITION", op::WAIT_POSITION),
    ("STATS", op::STATS),
    ("PING", op::PING),
    ("POSITION_AT", op::POSITION_AT),
    ("ROLE", op::ROLE),
    ("DUMP", op::DUMP),
    ("ACK", op::ACK),
    ("SUBSCRIBE", op::SUBSCRIBE),
    ("CLONE", op::CLONE),
    ("R_ERROR", op::R_ERROR),
    ("R_HELLO", op::R_HELLO),
    ("R_AUTH_OK", op::R_AUTH_OK),
    ("R_COMMITTED", op::R_COMMITTED),
    ("R_ROW", op::R_ROW),
    ("R_REACHED", op::R_REACHED),
    ("R_STATS", op::R_STATS),
    ("R_PONG", op::R_PONG),
    ("R_ROLE", op::R_ROLE),
    ("R_REPL_TXN", op::R_REPL_TXN),
    ("R_HEARTBEAT", op::R_HEARTBEAT),
    ("R_SUBSCRIBED", op::R_SUBSCRIBED),
    ("R_CLONE_BEGIN", op::R_CLONE_BEGIN),
    ("R_CLONE_CHUNK", op::R_CLONE_CHUNK),
    ("R_CLONE_END", op::R_CLONE_END),
];

/// Adds `PROTOCOL_VERSION`, `OPCODES`, `ERROR_CODES`, `ROW_OP_KINDS` and `VALUE_TYPES` to the module.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PROTOCOL_VERSION", PROTOCOL_VERSION)?;
    let opcodes = PyDict::new(py);
    for (name, code) in OPCODES {
        opcodes.set_item(name, code)?;
    }
    m.add("OPCODES", opcodes)?;
    let errors = PyDict::new(py);
    for code in (0..=u16::MAX).filter_map(ErrorCode::from_u16) {
        errors.set_item(code as u16, code.name())?;
    }
    m.add("ERROR_CODES", errors)?;
    let kinds = PyDict::new(py);
    for (name, tag) in [("PUT", OP_PUT), ("DELETE", OP_DELETE), ("INCREMENT", OP_INCREMENT)] {
        kinds.set_item(name, tag)?;
    }
    m.add("ROW_OP_KINDS", kinds)?;
    let types = PyDict::new(py);
    for (name, tag) in [("INT", VALUE_INT), ("TEXT", VALUE_TEXT)] {
        types.set_item(name, tag)?;
    }
    m.add("VALUE_TYPES", types)?;
    Ok(())
}

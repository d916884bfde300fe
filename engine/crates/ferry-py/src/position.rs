//! The `GtidPosition` class (at most one GTID per domain) and the module's position functions.
//!
//! Positions are immutable values: equal when they hold the same GTIDs, hashable, printed canonically
//! (sorted by domain). Methods that take another position accept a `GtidPosition` or its text.

use std::collections::BTreeMap;

use ferry_core::gtid::{DomainId, Gtid, GtidPosition, SeqNo};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyIterator, PyList, PyString, PyTuple};

use crate::errors::gtid_parse_error;
use crate::gtid::{self, PyGtid};

#[pyclass(name = "GtidPosition", module = "ferry_engine", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyGtidPosition(pub GtidPosition);

fn parse(py: Python<'_>, text: &str) -> PyResult<GtidPosition> {
    text.parse::<GtidPosition>().map_err(|e| gtid_parse_error(py, &e))
}

/// A position argument: a `GtidPosition`, or position text (parsed, so bad text raises `GtidParseError`).
fn position_arg(other: &Bound<'_, PyAny>) -> PyResult<GtidPosition> {
    if let Ok(pos) = other.cast::<PyGtidPosition>() {
        return Ok(pos.get().0.clone());
    }
    if let Ok(text) = other.cast::<PyString>() {
        return parse(other.py(), text.to_str()?);
    }
    Err(PyTypeError::new_err(format!("expected a GtidPosition or position text, got {}", other.get_type().name()?)))
}

/// A GTID argument: a `Gtid`, or GTID text.
fn gtid_arg(item: &Bound<'_, PyAny>) -> PyResult<Gtid> {
    if let Ok(g) = item.cast::<PyGtid>() {
        return Ok(g.get().0);
    }
    if let Ok(text) = item.cast::<PyString>() {
        return gtid::parse(item.py(), text.to_str()?);
    }
    Err(PyTypeError::new_err(format!("expected a Gtid or GTID text, got {}", item.get_type().name()?)))
}

#[pymethods]
impl PyGtidPosition {
    /// `GtidPosition("0-1-100,1-2-50")`; the empty text (the default) is the empty position.
    #[new]
    #[pyo3(signature = (text = ""))]
    fn new(py: Python<'_>, text: &str) -> PyResult<Self> {
        parse(py, text).map(PyGtidPosition)
    }

    /// Parses `d-s-n[,d-s-n…]`; a domain given twice is rejected.
    #[staticmethod]
    fn parse(py: Python<'_>, text: &str) -> PyResult<Self> {
        parse(py, text).map(PyGtidPosition)
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!("GtidPosition('{}')", self.0)
    }

    fn __len__(&self) -> usize {
        self.0.len()
    }

    /// The GTIDs, sorted by domain.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyIterator>> {
        let gtids = PyList::new(py, self.0.iter().map(PyGtid))?;
        gtids.try_iter()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let args = PyTuple::new(slf.py(), [slf.get().0.to_string()])?;
        Ok((slf.get_type().into_any(), args))
    }

    /// The domain's GTID, or None.
    fn get(&self, domain: DomainId) -> Option<PyGtid> {
        self.0.get(domain).map(PyGtid)
    }

    /// The domains, ascending.
    fn domains(&self) -> Vec<DomainId> {
        self.0.domains().collect()
    }

    /// True when, for every domain `other` has, this position has a GTID with a seq_no at least as high.
    fn is_ahead_of(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.0.is_ahead_of(&position_arg(other)?))
    }

    /// Transactions this position leads `other` by, per domain (a domain `other` lacks counts from 0);
    /// domains where it does not lead are left out.
    fn difference(&self, other: &Bound<'_, PyAny>) -> PyResult<BTreeMap<DomainId, SeqNo>> {
        Ok(self.0.difference(&position_arg(other)?))
    }

    /// The least position ahead of both: per domain, the GTID with the higher seq_no (ties keep this one's).
    fn join(&self, other: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyGtidPosition(self.0.join(&position_arg(other)?)))
    }

    /// `{domain: "d-s-n"}`.
    fn to_dict(&self) -> BTreeMap<DomainId, String> {
        self.0.iter().map(|g| (g.domain, g.to_string())).collect()
    }
}

/// Parses position text into a `GtidPosition`; bad text raises `GtidParseError`.
#[pyfunction]
pub fn parse_position(py: Python<'_>, text: &str) -> PyResult<PyGtidPosition> {
    parse(py, text).map(PyGtidPosition)
}

/// Canonical position text of GTIDs (`Gtid` objects or `d-s-n` strings): sorted by domain, comma-separated.
/// Two GTIDs of one domain are not a position: that raises `ValueError`.
#[pyfunction]
pub fn format_position(gtids: &Bound<'_, PyAny>) -> PyResult<String> {
    if gtids.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("format_position takes an iterable of GTIDs, not a string"));
    }
    let mut pos = GtidPosition::new();
    for item in gtids.try_iter()? {
        let gtid = gtid_arg(&item?)?;
        if let Some(have) = pos.get(gtid.domain) {
            return Err(PyValueError::new_err(format!(
                "domain {} appears twice ({have} and {gtid}); a position holds one GTID per domain",
                gtid.domain
            )));
        }
        pos.set(gtid);
    }
    Ok(pos.to_string())
}

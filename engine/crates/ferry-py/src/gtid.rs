//! The `Gtid` class: one global transaction id, `domain-server-seq`.
//!
//! Equality and hashing use all three numbers. Ordering is only defined inside one domain, where it is seq_no
//! order (the server is ignored: MariaDB orders a domain by seq_no alone); comparing GTIDs of different
//! domains with `<`, `<=`, `>` or `>=` raises `TypeError`, because domains are independent streams.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use ferry_core::gtid::{DomainId, Gtid, SeqNo, ServerId};
use pyo3::basic::CompareOp;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::gtid_parse_error;

#[pyclass(name = "Gtid", module = "ferry_engine", frozen)]
#[derive(Clone, Copy)]
pub struct PyGtid(pub Gtid);

/// Parses `d-s-n`, raising `GtidParseError` with the core's column on bad text.
pub fn parse(py: Python<'_>, text: &str) -> PyResult<Gtid> {
    text.parse::<Gtid>().map_err(|e| gtid_parse_error(py, &e))
}

#[pymethods]
impl PyGtid {
    #[new]
    fn new(domain: DomainId, server: ServerId, seq: SeqNo) -> Self {
        PyGtid(Gtid::new(domain, server, seq))
    }

    /// Parses `domain-server-seq`, e.g. `0-1-100`.
    #[staticmethod]
    fn parse(py: Python<'_>, text: &str) -> PyResult<Self> {
        parse(py, text).map(PyGtid)
    }

    #[getter]
    fn domain(&self) -> DomainId {
        self.0.domain
    }

    #[getter]
    fn server(&self) -> ServerId {
        self.0.server
    }

    #[getter]
    fn seq(&self) -> SeqNo {
        self.0.seq
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!("Gtid({}, {}, {})", self.0.domain, self.0.server, self.0.seq)
    }

    fn __hash__(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.0.hash(&mut h);
        h.finish()
    }

    fn __richcmp__(&self, other: PyRef<'_, Self>, op: CompareOp) -> PyResult<bool> {
        let (a, b) = (self.0, other.0);
        match op {
            CompareOp::Eq => Ok(a == b),
            CompareOp::Ne => Ok(a != b),
            _ if a.domain != b.domain => Err(PyTypeError::new_err(format!(
                "GTIDs of different domains are not ordered: {a} and {b} (compare seq_no within one domain)"
            ))),
            _ => Ok(op.matches(a.seq.cmp(&b.seq))),
        }
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let g = slf.get().0;
        let args = PyTuple::new(slf.py(), [u64::from(g.domain), u64::from(g.server), g.seq])?;
        Ok((slf.get_type().into_any(), args))
    }
}

/// Parses `domain-server-seq` into a `Gtid`; bad text raises `GtidParseError`.
#[pyfunction]
pub fn parse_gtid(py: Python<'_>, text: &str) -> PyResult<PyGtid> {
    parse(py, text).map(PyGtid)
}

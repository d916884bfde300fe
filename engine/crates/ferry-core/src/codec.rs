//! Little-endian byte encoding shared by the binlog event format and the wire protocol.
//!
//! `Decoder` never panics on untrusted input: every read is bounds-checked and every length is checked
//! against what is left before anything is allocated, so a corrupt length cannot ask for gigabytes.

use crate::gtid::Gtid;

/// Why bytes could not be decoded; `at` is the offset inside the decoded buffer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {at}")]
pub struct DecodeError {
    pub at: usize,
    pub what: String,
}

/// Appends values to a growing buffer.
#[derive(Debug, Default)]
pub struct Encoder {
    pub buf: Vec<u8>,
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }

    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Length-prefixed (u32) bytes.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u32(v.len() as u32);
        self.buf.extend_from_slice(v);
        self
    }

    pub fn str(&mut self, v: &str) -> &mut Self {
        self.bytes(v.as_bytes())
    }

    pub fn gtid(&mut self, g: Gtid) -> &mut Self {
        self.u32(g.domain).u32(g.server).u64(g.seq)
    }

    /// Optional value: a presence byte then the value.
    pub fn opt<T>(&mut self, v: Option<T>, put: impl FnOnce(&mut Self, T)) -> &mut Self {
        match v {
            None => {
                self.u8(0);
            }
            Some(x) => {
                self.u8(1);
                put(self, x);
            }
        }
        self
    }
}

/// Reads values from a byte slice, failing with the offset of the first problem.
#[derive(Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, at: 0 }
    }

    pub fn offset(&self) -> usize {
        self.at
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    pub fn error(&self, what: impl Into<String>) -> DecodeError {
        DecodeError { at: self.at, what: what.into() }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(self.error(format!("truncated {what}: need {n} bytes, {} left", self.remaining())));
        }
        let out = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    pub fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().expect("2 bytes")))
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().expect("4 bytes")))
    }

    pub fn u64(&mut self, what: &str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().expect("8 bytes")))
    }

    pub fn i64(&mut self, what: &str) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.take(8, what)?.try_into().expect("8 bytes")))
    }

    pub fn bytes(&mut self, what: &str) -> Result<&'a [u8], DecodeError> {
        let len = self.u32(what)? as usize;
        self.take(len, what)
    }

    pub fn str(&mut self, what: &str) -> Result<&'a str, DecodeError> {
        let start = self.at;
        let raw = self.bytes(what)?;
        std::str::from_utf8(raw).map_err(|_| DecodeError { at: start, what: format!("{what} is not UTF-8") })
    }

    pub fn gtid(&mut self, what: &str) -> Result<Gtid, DecodeError> {
        Ok(Gtid::new(self.u32(what)?, self.u32(what)?, self.u64(what)?))
    }

    pub fn bool(&mut self, what: &str) -> Result<bool, DecodeError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => {
                Err(DecodeError { at: self.at - 1, what: format!("{what}: flag byte {other} is neither 0 nor 1") })
            }
        }
    }

    pub fn opt<T>(
        &mut self,
        what: &str,
        get: impl FnOnce(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Option<T>, DecodeError> {
        Ok(if self.bool(what)? { Some(get(self)?) } else { None })
    }

    /// A u32 element count, refused when even `min_element_bytes` per element could not fit in what is left.
    pub fn count(&mut self, what: &str, min_element_bytes: usize) -> Result<usize, DecodeError> {
        let n = self.u32(what)? as usize;
        if n.saturating_mul(min_element_bytes.max(1)) > self.remaining() {
            return Err(self.error(format!("{what}: count {n} cannot fit in the {} bytes left", self.remaining())));
        }
        Ok(n)
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self, what: &str) -> Result<(), DecodeError> {
        if self.remaining() != 0 {
            return Err(self.error(format!("{} unexpected trailing bytes after {what}", self.remaining())));
        }
        Ok(())
    }
}

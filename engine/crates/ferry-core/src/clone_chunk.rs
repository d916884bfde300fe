//! The rows of a clone chunk (`Response::CloneChunk`'s `data`): `count: u32`, then per row `key` and the row's
//! stored bytes ([`crate::row::row_bytes`]), each length-prefixed, keys strictly increasing; the chunk carries the
//! CRC32C of these bytes. Decoding checks the checksum first, then every length, the key order and every row's
//! encoding, and names what is wrong: a donor's bytes are never trusted.

use crate::codec::{DecodeError, Decoder, Encoder};
use crate::row::row_from_bytes;

/// Bytes one row adds to a chunk (and to a clone's `bytes_total`): two length prefixes, the key, the row.
pub fn row_chunk_bytes(key: &str, row: &[u8]) -> u64 {
    8 + key.len() as u64 + row.len() as u64
}

/// Encodes rows (in key order) as a chunk's data; returns it with its CRC32C.
pub fn encode(rows: &[(String, Vec<u8>)]) -> (Vec<u8>, u32) {
    let mut e = Encoder::new();
    e.u32(rows.len() as u32);
    for (key, row) in rows {
        e.str(key).bytes(row);
    }
    let crc = crc32c::crc32c(&e.buf);
    (e.buf, crc)
}

/// Why a chunk was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    #[error("chunk of table {table:?} fails its checksum: CRC32C {actual:08x} of its {len} bytes, the donor sent {sent:08x}")]
    Checksum { table: String, len: usize, sent: u32, actual: u32 },
    #[error("chunk of table {table:?} is malformed: {error}")]
    Malformed { table: String, error: DecodeError },
    #[error("chunk of table {table:?}: key {key:?} does not follow {previous:?} (keys must be strictly increasing)")]
    Order { table: String, previous: String, key: String },
    #[error("chunk of table {table:?}: row {key:?} is not a row's encoding: {error}")]
    BadRow { table: String, key: String, error: DecodeError },
}

/// Checks and decodes a chunk of `table`: its rows, in key order, as (key, stored row bytes).
pub fn decode(table: &str, data: &[u8], crc32c: u32) -> Result<Vec<(String, Vec<u8>)>, ChunkError> {
    let actual = crc32c::crc32c(data);
    if actual != crc32c {
        return Err(ChunkError::Checksum { table: table.to_string(), len: data.len(), sent: crc32c, actual });
    }
    decode_unchecked(table, data)
}

/// [`decode`] without the checksum (the fuzz target reaches the decoder through it).
pub fn decode_unchecked(table: &str, data: &[u8]) -> Result<Vec<(String, Vec<u8>)>, ChunkError> {
    let malformed = |error| ChunkError::Malformed { table: table.to_string(), error };
    let mut d = Decoder::new(data);
    let n = d.count("row count", 8).map_err(malformed)?;
    let mut rows: Vec<(String, Vec<u8>)> = Vec::with_capacity(n);
    for _ in 0..n {
        let key = d.str("key").map_err(malformed)?;
        let row = d.bytes("row").map_err(malformed)?;
        if let Some((previous, _)) = rows.last() {
            if previous.as_str() >= key {
                return Err(ChunkError::Order {
                    table: table.to_string(),
                    previous: previous.clone(),
                    key: key.to_string(),
                });
            }
        }
        row_from_bytes(row).map_err(|error| ChunkError::BadRow {
            table: table.to_string(),
            key: key.to_string(),
            error,
        })?;
        rows.push((key.to_string(), row.to_vec()));
    }
    d.finish("chunk").map_err(malformed)?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::{row_bytes, Row, Value};

    fn rows() -> Vec<(String, Vec<u8>)> {
        (0..3)
            .map(|i| {
                let row: Row = [("n".to_string(), Value::Int(i))].into();
                (format!("k{i}"), row_bytes(&row))
            })
            .collect()
    }

    #[test]
    fn a_chunk_round_trips_and_its_size_is_the_rows_sizes() {
        let (data, crc) = encode(&rows());
        assert_eq!(decode("t", &data, crc).unwrap(), rows());
        let sizes: u64 = rows().iter().map(|(k, r)| row_chunk_bytes(k, r)).sum();
        assert_eq!(data.len() as u64, 4 + sizes);
    }

    #[test]
    fn damaged_chunks_are_refused_precisely() {
        let (mut data, crc) = encode(&rows());
        data[6] ^= 1;
        let err = decode("t", &data, crc).unwrap_err();
        assert!(matches!(err, ChunkError::Checksum { .. }), "{err}");
        assert!(err.to_string().contains("fails its checksum"), "{err}");
        let (data, _) = encode(&rows());
        let cut = &data[..data.len() - 2];
        let err = decode("t", cut, crc32c::crc32c(cut)).unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        let mut reversed = rows();
        reversed.reverse();
        let (data, crc) = encode(&reversed);
        assert!(matches!(decode("t", &data, crc).unwrap_err(), ChunkError::Order { .. }));
        let (data, crc) = encode(&[("k".to_string(), vec![9, 9])]);
        assert!(matches!(decode("t", &data, crc).unwrap_err(), ChunkError::BadRow { .. }));
    }
}

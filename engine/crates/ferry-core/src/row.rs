//! Rows and row operations: what clients ask for (put / delete / increment) and the row images the binlog keeps.
//!
//! A row is a small record of named fields, keyed by a primary key inside a named table. The master turns each
//! operation into a [`RowChange`] with the after image (and the before image when it had one), so replay never
//! re-evaluates an increment: it writes the image, which makes apply deterministic.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::codec::{DecodeError, Decoder, Encoder};

/// A field value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Int(i64),
    Text(String),
}

/// A row: field name → value. BTreeMap keeps the encoding canonical, which checksums rely on.
pub type Row = BTreeMap<String, Value>;

/// What a client asks a transaction to do to one row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum RowOp {
    /// Replace the row (insert when absent).
    Put { table: String, key: String, row: Row },
    /// Remove the row (a no-op change when absent).
    Delete { table: String, key: String },
    /// Add `by` to an integer field, creating the row and the field (from 0) when absent.
    Increment { table: String, key: String, field: String, by: i64 },
}

impl RowOp {
    pub fn table(&self) -> &str {
        match self {
            RowOp::Put { table, .. } | RowOp::Delete { table, .. } | RowOp::Increment { table, .. } => table,
        }
    }

    pub fn key(&self) -> &str {
        match self {
            RowOp::Put { key, .. } | RowOp::Delete { key, .. } | RowOp::Increment { key, .. } => key,
        }
    }
}

/// One row's change as logged: the images before and after (None = row absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowChange {
    pub table: String,
    pub key: String,
    /// The row before the change, when the master logs before images and the row existed.
    pub before: Option<Row>,
    /// The row after the change; None means the row was deleted.
    pub after: Option<Row>,
}

/// Type tags of a row field's value on the wire.
pub const VALUE_INT: u8 = 1;
pub const VALUE_TEXT: u8 = 2;

pub fn encode_row(enc: &mut Encoder, row: &Row) {
    enc.u32(row.len() as u32);
    for (name, value) in row {
        enc.str(name);
        match value {
            Value::Int(i) => enc.u8(VALUE_INT).i64(*i),
            Value::Text(t) => enc.u8(VALUE_TEXT).str(t),
        };
    }
}

pub fn decode_row(dec: &mut Decoder<'_>) -> Result<Row, DecodeError> {
    // Each field takes at least a 4-byte name length, a tag and a 4-byte payload.
    let n = dec.count("row field count", 9)?;
    let mut row = Row::new();
    for _ in 0..n {
        let name = dec.str("field name")?.to_string();
        let value = match dec.u8("field type")? {
            VALUE_INT => Value::Int(dec.i64("integer field")?),
            VALUE_TEXT => Value::Text(dec.str("text field")?.to_string()),
            other => return Err(dec.error(format!("unknown field type {other} for field {name:?}"))),
        };
        // Fields are stored sorted by name, so each row has exactly one encoding (checksums rely on it).
        if let Some((last, _)) = row.last_key_value() {
            if *last >= name {
                return Err(dec.error(format!("field {name:?} is out of order or repeated after {last:?}")));
            }
        }
        row.insert(name, value);
    }
    Ok(row)
}

/// The canonical bytes of a row (what is stored and checksummed).
pub fn row_bytes(row: &Row) -> Vec<u8> {
    let mut enc = Encoder::new();
    encode_row(&mut enc, row);
    enc.buf
}

pub fn row_from_bytes(bytes: &[u8]) -> Result<Row, DecodeError> {
    let mut dec = Decoder::new(bytes);
    let row = decode_row(&mut dec)?;
    dec.finish("row")?;
    Ok(row)
}

/// Kind tags of a row operation in a Transact request.
pub const OP_PUT: u8 = 1;
pub const OP_DELETE: u8 = 2;
pub const OP_INCREMENT: u8 = 3;

pub fn encode_op(enc: &mut Encoder, op: &RowOp) {
    match op {
        RowOp::Put { table, key, row } => {
            enc.u8(OP_PUT).str(table).str(key);
            encode_row(enc, row);
        }
        RowOp::Delete { table, key } => {
            enc.u8(OP_DELETE).str(table).str(key);
        }
        RowOp::Increment { table, key, field, by } => {
            enc.u8(OP_INCREMENT).str(table).str(key).str(field).i64(*by);
        }
    }
}

pub fn decode_op(dec: &mut Decoder<'_>) -> Result<RowOp, DecodeError> {
    let kind = dec.u8("row operation")?;
    let op = match kind {
        OP_PUT => RowOp::Put {
            table: dec.str("table name")?.to_string(),
            key: dec.str("key")?.to_string(),
            row: decode_row(dec)?,
        },
        OP_DELETE => RowOp::Delete { table: dec.str("table name")?.to_string(), key: dec.str("key")?.to_string() },
        OP_INCREMENT => RowOp::Increment {
            table: dec.str("table name")?.to_string(),
            key: dec.str("key")?.to_string(),
            field: dec.str("field name")?.to_string(),
            by: dec.i64("increment")?,
        },
        other => return Err(dec.error(format!("unknown row operation {other}"))),
    };
    Ok(op)
}

pub fn encode_change(enc: &mut Encoder, change: &RowChange) {
    enc.str(&change.table).str(&change.key);
    enc.opt(change.before.as_ref(), encode_row);
    enc.opt(change.after.as_ref(), encode_row);
}

/// Bytes [`encode_row`] writes for `row`, computed without encoding it.
pub fn encoded_row_len(row: &Row) -> usize {
    4 + row
        .iter()
        .map(|(name, value)| {
            4 + name.len()
                + 1
                + match value {
                    Value::Int(_) => 8,
                    Value::Text(t) => 4 + t.len(),
                }
        })
        .sum::<usize>()
}

/// Bytes [`encode_change`] writes for `change`, computed without encoding it.
pub fn encoded_change_len(change: &RowChange) -> usize {
    let image = |r: &Option<Row>| 1 + r.as_ref().map_or(0, encoded_row_len);
    4 + change.table.len() + 4 + change.key.len() + image(&change.before) + image(&change.after)
}

pub fn decode_change(dec: &mut Decoder<'_>) -> Result<RowChange, DecodeError> {
    Ok(RowChange {
        table: dec.str("table name")?.to_string(),
        key: dec.str("key")?.to_string(),
        before: dec.opt("before image flag", decode_row)?,
        after: dec.opt("after image flag", decode_row)?,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    pub fn arb_change() -> impl Strategy<Value = RowChange> {
        ("[a-z]{1,8}", "[ -~]{0,10}", proptest::option::of(arb_row()), proptest::option::of(arb_row()))
            .prop_map(|(table, key, before, after)| RowChange { table, key, before, after })
    }

    pub fn arb_row() -> impl Strategy<Value = Row> {
        proptest::collection::btree_map(
            "[a-z]{1,6}",
            prop_oneof![any::<i64>().prop_map(Value::Int), "[ -~]{0,12}".prop_map(Value::Text)],
            0..5,
        )
    }

    fn arb_op() -> impl Strategy<Value = RowOp> {
        prop_oneof![
            ("[a-z]{1,8}", "[ -~]{0,10}", arb_row()).prop_map(|(table, key, row)| RowOp::Put { table, key, row }),
            ("[a-z]{1,8}", "[ -~]{0,10}").prop_map(|(table, key)| RowOp::Delete { table, key }),
            ("[a-z]{1,8}", "[ -~]{0,10}", "[a-z]{1,5}", any::<i64>())
                .prop_map(|(table, key, field, by)| RowOp::Increment { table, key, field, by }),
        ]
    }

    proptest! {
        #[test]
        fn rows_round_trip(row in arb_row()) {
            prop_assert_eq!(row_from_bytes(&row_bytes(&row)).unwrap(), row);
        }

        #[test]
        fn ops_round_trip(op in arb_op()) {
            let mut enc = Encoder::new();
            encode_op(&mut enc, &op);
            let mut dec = Decoder::new(&enc.buf);
            prop_assert_eq!(decode_op(&mut dec).unwrap(), op);
            prop_assert_eq!(dec.remaining(), 0);
        }

        #[test]
        fn changes_round_trip(table in "[a-z]{1,8}", key in "[ -~]{0,10}", before in proptest::option::of(arb_row()), after in proptest::option::of(arb_row())) {
            let change = RowChange { table, key, before, after };
            let mut enc = Encoder::new();
            encode_change(&mut enc, &change);
            let mut dec = Decoder::new(&enc.buf);
            prop_assert_eq!(decode_change(&mut dec).unwrap(), change);
        }
    }

    #[test]
    fn a_row_has_exactly_one_encoding() {
        let mut enc = Encoder::new();
        enc.u32(2).str("b").u8(VALUE_INT).i64(1).str("a").u8(VALUE_INT).i64(2);
        let err = row_from_bytes(&enc.buf).unwrap_err();
        assert!(err.what.contains("out of order"), "{err}");
        let mut enc = Encoder::new();
        enc.u32(2).str("a").u8(VALUE_INT).i64(1).str("a").u8(VALUE_INT).i64(2);
        assert!(row_from_bytes(&enc.buf).unwrap_err().what.contains("repeated"));
    }

    #[test]
    fn a_row_with_a_huge_field_count_is_refused_before_allocating() {
        let mut enc = Encoder::new();
        enc.u32(u32::MAX);
        let err = row_from_bytes(&enc.buf).unwrap_err();
        assert!(err.what.contains("cannot fit"), "{err}");
    }
}

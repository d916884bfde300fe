//! The row store: named tables of rows keyed by primary key, in redb (an embedded, crash-safe B-tree store).
//!
//! Commit groups are applied with redb's non-durable commits; the store is made durable only at checkpoints.
//! Every apply also records, in the same redb transaction, the binlog coordinate it has applied through, so
//! whatever state redb comes back with after a crash names exactly where binlog replay has to resume.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition, TableHandle};
use serde::Serialize;

use crate::binlog::BinlogCoord;
use crate::row::{row_bytes, row_from_bytes, Row, RowChange};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("sys.meta");
/// `(domain_id, sub_id) → (server_id, seq_no)`: the replica's applied state, one row per applied transaction,
/// written in the same commit as the transaction's data (filled by replication).
pub const REPLICA_STATE: TableDefinition<(u32, u64), (u32, u64)> = TableDefinition::new("sys.replica_state");
const APPLIED_THROUGH: &str = "applied_through";
/// User tables live under this prefix so they can never collide with the store's own tables.
const USER_PREFIX: &str = "t.";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store: {0}")]
    Redb(#[from] redb::Error),
    #[error("store holds an undecodable row in table {table:?} key {key:?}: {reason}")]
    BadRow { table: String, key: String, reason: String },
}

fn redb_err<E: Into<redb::Error>>(e: E) -> StoreError {
    StoreError::Redb(e.into())
}

/// Row count and an order-independent checksum of one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TableChecksum {
    pub rows: u64,
    /// Wrapping sum of xxh3-64 over each (key, row) pair: equal tables give equal sums in any scan order.
    pub checksum: u64,
}

pub struct Store {
    db: Database,
}

fn user_table(name: &str) -> TableDefinition<'_, &'static str, &'static [u8]> {
    TableDefinition::new(name)
}

impl Store {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let db = Database::create(path).map_err(redb_err)?;
        let txn = db.begin_write().map_err(redb_err)?;
        txn.open_table(META).map_err(redb_err)?;
        txn.open_table(REPLICA_STATE).map_err(redb_err)?;
        txn.commit().map_err(redb_err)?;
        Ok(Store { db })
    }

    /// The binlog coordinate the store's content corresponds to (None for a new store).
    pub fn applied_through(&self) -> Result<Option<BinlogCoord>, StoreError> {
        let txn = self.db.begin_read().map_err(redb_err)?;
        let meta = txn.open_table(META).map_err(redb_err)?;
        let value = meta.get(APPLIED_THROUGH).map_err(redb_err)?;
        Ok(value.and_then(|v| serde_json::from_slice(v.value()).ok()))
    }

    /// Reads rows; absent rows (or tables) are None. One read transaction for all of them.
    pub fn read_rows(&self, keys: &[(&str, &str)]) -> Result<Vec<Option<Row>>, StoreError> {
        let txn = self.db.begin_read().map_err(redb_err)?;
        let mut out = Vec::with_capacity(keys.len());
        for (table, key) in keys {
            let name = format!("{USER_PREFIX}{table}");
            let t = match txn.open_table(user_table(&name)) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => {
                    out.push(None);
                    continue;
                }
                Err(e) => return Err(redb_err(e)),
            };
            let row = match t.get(*key).map_err(redb_err)? {
                Some(bytes) => Some(row_from_bytes(bytes.value()).map_err(|e| StoreError::BadRow {
                    table: table.to_string(),
                    key: key.to_string(),
                    reason: e.to_string(),
                })?),
                None => None,
            };
            out.push(row);
        }
        Ok(out)
    }

    pub fn get(&self, table: &str, key: &str) -> Result<Option<Row>, StoreError> {
        Ok(self.read_rows(&[(table, key)])?.pop().flatten())
    }

    /// Applies transactions' row images in order, in one store transaction, recording `through`.
    /// `durable` makes this commit (and every earlier one) reach the disk before returning.
    pub fn apply<'a>(
        &self,
        txns: impl IntoIterator<Item = &'a [RowChange]>,
        through: BinlogCoord,
        durable: bool,
    ) -> Result<(), StoreError> {
        let mut txn = self.db.begin_write().map_err(redb_err)?;
        txn.set_durability(if durable { Durability::Immediate } else { Durability::None }).map_err(redb_err)?;
        {
            let mut names: HashMap<&str, String> = HashMap::new();
            for changes in txns {
                for change in changes {
                    let name = names.entry(change.table.as_str()).or_insert_with(|| format!("{USER_PREFIX}{}", change.table));
                    let mut table = txn.open_table(user_table(name)).map_err(redb_err)?;
                    match &change.after {
                        Some(row) => {
                            table.insert(change.key.as_str(), row_bytes(row).as_slice()).map_err(redb_err)?;
                        }
                        None => {
                            table.remove(change.key.as_str()).map_err(redb_err)?;
                        }
                    }
                }
            }
            let mut meta = txn.open_table(META).map_err(redb_err)?;
            let coord = serde_json::to_vec(&through).expect("coordinates serialize");
            meta.insert(APPLIED_THROUGH, coord.as_slice()).map_err(redb_err)?;
        }
        txn.commit().map_err(redb_err)
    }

    /// Makes everything applied so far durable; returns the coordinate it is durable through.
    pub fn checkpoint(&self) -> Result<Option<BinlogCoord>, StoreError> {
        let mut txn = self.db.begin_write().map_err(redb_err)?;
        txn.set_durability(Durability::Immediate).map_err(redb_err)?;
        let through = {
            let meta = txn.open_table(META).map_err(redb_err)?;
            let v = meta.get(APPLIED_THROUGH).map_err(redb_err)?;
            v.and_then(|v| serde_json::from_slice(v.value()).ok())
        };
        txn.commit().map_err(redb_err)?;
        Ok(through)
    }

    /// Per user table: row count and order-independent checksum.
    pub fn checksums(&self) -> Result<BTreeMap<String, TableChecksum>, StoreError> {
        let txn = self.db.begin_read().map_err(redb_err)?;
        let mut out = BTreeMap::new();
        for handle in txn.list_tables().map_err(redb_err)? {
            let Some(name) = handle.name().strip_prefix(USER_PREFIX) else { continue };
            let full = handle.name().to_string();
            let table = txn.open_table(user_table(&full)).map_err(redb_err)?;
            let mut sum = TableChecksum { rows: 0, checksum: 0 };
            for entry in table.iter().map_err(redb_err)? {
                let (k, v) = entry.map_err(redb_err)?;
                let key = k.value().as_bytes();
                let mut bytes = Vec::with_capacity(8 + key.len() + v.value().len());
                bytes.extend_from_slice(&(key.len() as u64).to_le_bytes());
                bytes.extend_from_slice(key);
                bytes.extend_from_slice(v.value());
                sum.rows += 1;
                sum.checksum = sum.checksum.wrapping_add(xxhash_rust::xxh3::xxh3_64(&bytes));
            }
            out.insert(name.to_string(), sum);
        }
        Ok(out)
    }

    /// Every row of a table, in key order (for tests and inspection).
    pub fn scan(&self, table: &str) -> Result<Vec<(String, Row)>, StoreError> {
        let txn = self.db.begin_read().map_err(redb_err)?;
        let name = format!("{USER_PREFIX}{table}");
        let t = match txn.open_table(user_table(&name)) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(redb_err(e)),
        };
        let mut out = Vec::new();
        for entry in t.iter().map_err(redb_err)? {
            let (k, v) = entry.map_err(redb_err)?;
            let row = row_from_bytes(v.value()).map_err(|e| StoreError::BadRow {
                table: table.to_string(),
                key: k.value().to_string(),
                reason: e.to_string(),
            })?;
            out.push((k.value().to_string(), row));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::Value;

    fn change(key: &str, n: Option<i64>) -> RowChange {
        RowChange {
            table: "t".into(),
            key: key.into(),
            before: None,
            after: n.map(|n| [("n".to_string(), Value::Int(n))].into()),
        }
    }

    #[test]
    fn applies_images_and_remembers_the_coordinate() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        assert_eq!(store.applied_through().unwrap(), None);
        let through = BinlogCoord { file_seq: 1, offset: 99 };
        let t1 = [change("a", Some(1)), change("b", Some(2))];
        let t2 = [change("a", None)];
        store.apply([&t1[..], &t2[..]], through, false).unwrap();
        assert_eq!(store.get("t", "a").unwrap(), None);
        assert_eq!(store.get("t", "b").unwrap().unwrap()["n"], Value::Int(2));
        assert_eq!(store.get("missing", "x").unwrap(), None);
        assert_eq!(store.applied_through().unwrap(), Some(through));
        assert_eq!(store.checkpoint().unwrap(), Some(through));
    }

    #[test]
    fn checksums_do_not_depend_on_write_order() {
        let dir = tempfile::tempdir().unwrap();
        let a = Store::open(&dir.path().join("a.redb")).unwrap();
        let b = Store::open(&dir.path().join("b.redb")).unwrap();
        let c = BinlogCoord { file_seq: 1, offset: 1 };
        let rows: Vec<RowChange> = (0..50).map(|i| change(&format!("k{i}"), Some(i))).collect();
        a.apply([&rows[..]], c, false).unwrap();
        let reversed: Vec<RowChange> = rows.iter().rev().cloned().collect();
        b.apply([&reversed[..]], c, false).unwrap();
        assert_eq!(a.checksums().unwrap(), b.checksums().unwrap());
        assert_eq!(a.checksums().unwrap()["t"].rows, 50);
        b.apply([&[change("k1", Some(7))][..]], c, false).unwrap();
        assert_ne!(a.checksums().unwrap(), b.checksums().unwrap());
    }
}

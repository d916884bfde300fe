//! The row store: named tables of rows keyed by primary key, in redb (an embedded, crash-safe B-tree store)
//! under an in-memory table of recent changes.
//!
//! Commit groups are applied to the in-memory table only (a hash-map insert per row, inside the commit's
//! serial part). A flush moves it into redb in one transaction that also records the binlog coordinate it
//! covers; a durable flush is a checkpoint. Whatever state redb comes back with after a crash therefore names
//! exactly where binlog replay has to resume. Reads look at the in-memory layers first, then redb.
//!
//! A [`StoreSnapshot`] is a consistent view of everything applied, taken without writing anything: the
//! in-memory table is frozen (a move, no copy) and kept with a redb read snapshot, so a long read (table
//! checksums) neither flushes nor waits for a flush.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard, RwLock};
use redb::{
    Database, Durability, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
    TableHandle,
};
use serde::Serialize;

use crate::binlog::BinlogCoord;
use crate::fault::{self, sites, StorageHealth};
use crate::gtid::{Gtid, GtidPosition};
use crate::row::{row_bytes, row_from_bytes, Row, RowChange};
use crate::vfs::fence::{Fence, FencedBackend};
use crate::vfs::{self, Fs};

mod clone;
pub use clone::{CloneSource, CloneSummary, StagingBatch};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("sys.meta");
/// `(domain_id, sub_id) → (server_id, seq_no)`: the replica's applied state, one row per applied transaction,
/// written in the same commit as the transaction's data (filled by replication).
pub const REPLICA_STATE: TableDefinition<(u32, u64), (u32, u64)> = TableDefinition::new("sys.replica_state");
const APPLIED_THROUGH: &str = "applied_through";
/// The archive name of the last rewind whose store part is done (see [`Store::rewind`]).
const REWOUND_BY: &str = "rewound_by";
/// Present while everything the store holds came from the binlog as it is on disk from its first file on (see
/// [`Store::mark_history_in_binlog`]); RESET MASTER removes it.
const HISTORY_IN_BINLOG: &str = "history_in_binlog";
/// User tables live under this prefix so they can never collide with the store's own tables.
const USER_PREFIX: &str = "t.";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store: {0}")]
    Redb(#[from] redb::Error),
    #[error("store holds an undecodable row in table {table:?} key {key:?}: {reason}")]
    BadRow { table: String, key: String, reason: String },
    /// An injected I/O fault (failpoint tests).
    #[error("store: {0}")]
    Io(#[from] std::io::Error),
    /// A write or flush failed earlier: the store takes no more writes until the node restarts.
    #[error("storage failed: {0}")]
    Failed(String),
}

/// In a rewind's commit: user table `table`'s row `key` set to `row`, or removed (None).
fn put_row(txn: &redb::WriteTransaction, table: &str, key: &str, row: Option<&Row>) -> Result<(), StoreError> {
    let name = format!("{USER_PREFIX}{table}");
    let mut t = txn.open_table(user_table(&name)).map_err(redb_err)?;
    match row {
        Some(row) => {
            t.insert(key, row_bytes(row).as_slice()).map_err(redb_err)?;
        }
        None => {
            t.remove(key).map_err(redb_err)?;
        }
    }
    Ok(())
}

fn redb_err<E: Into<redb::Error>>(e: E) -> StoreError {
    StoreError::Redb(e.into())
}

/// Row count and an order-independent checksum of one table.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TableChecksum {
    pub rows: u64,
    /// Wrapping sum of xxh3-64 over each (key, row) pair: equal tables give equal sums in any scan order.
    pub checksum: u64,
}

impl TableChecksum {
    /// Adds one row, given its key and its stored bytes ([`row_bytes`]).
    pub fn add(&mut self, key: &str, row: &[u8]) {
        let mut bytes = Vec::with_capacity(8 + key.len() + row.len());
        bytes.extend_from_slice(&(key.len() as u64).to_le_bytes());
        bytes.extend_from_slice(key.as_bytes());
        bytes.extend_from_slice(row);
        self.rows += 1;
        self.checksum = self.checksum.wrapping_add(xxhash_rust::xxh3::xxh3_64(&bytes));
    }
}

/// Recent changes not yet flushed to redb: the newest image per row (None = deleted).
#[derive(Default)]
struct MemTable {
    /// table → key → newest image; nested so lookups by `&str` need no allocation.
    rows: HashMap<String, HashMap<String, Option<Row>>>,
    /// Rows held (over all tables).
    len: usize,
    /// Replica-state rows of replicated transactions: (sub_id, GTID), in apply order.
    replicated: Vec<(u64, Gtid)>,
    /// Binlog coordinate these changes bring the store to.
    through: Option<BinlogCoord>,
}

impl MemTable {
    /// Nothing applied since it was started: freezing it would add nothing.
    fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.replicated.is_empty() && self.through.is_none()
    }

    fn get(&self, table: &str, key: &str) -> Option<&Option<Row>> {
        self.rows.get(table)?.get(key)
    }

    fn insert(&mut self, table: &str, key: &str, row: Option<Row>) {
        let rows = match self.rows.get_mut(table) {
            Some(rows) => rows,
            None => self.rows.entry(table.to_string()).or_default(),
        };
        match rows.get_mut(key) {
            Some(slot) => *slot = row,
            None => {
                rows.insert(key.to_string(), row);
                self.len += 1;
            }
        }
    }
}

/// The in-memory layers: `active` takes applies; `frozen` holds older changes not yet in redb, oldest first. A
/// flush freezes `active` and writes every frozen layer (it removes them once redb has them); a snapshot freezes
/// `active` and writes nothing, so its layer waits for the next flush.
#[derive(Default)]
struct Layers {
    active: MemTable,
    frozen: Vec<Arc<MemTable>>,
}

impl Layers {
    /// Moves what was applied since the last freeze into a frozen layer of its own (a move, no copy).
    fn freeze_active(&mut self) {
        if !self.active.is_empty() {
            let active = std::mem::take(&mut self.active);
            self.frozen.push(Arc::new(active));
        }
    }

    /// The newest image of a row held in memory: `None` when redb has the answer.
    fn get(&self, table: &str, key: &str) -> Option<&Option<Row>> {
        self.active.get(table, key).or_else(|| self.frozen.iter().rev().find_map(|layer| layer.get(table, key)))
    }

    /// The coordinate the changes held in memory bring the store to.
    fn through(&self) -> Option<BinlogCoord> {
        self.active.through.or_else(|| self.frozen.iter().rev().find_map(|layer| layer.through))
    }
}

pub struct Store {
    db: Database,
    /// Cuts the store's file off (see [`Store::fence`]).
    fence: Fence,
    layers: RwLock<Layers>,
    /// One flush at a time.
    flush_lock: Mutex<()>,
    /// Next sub_id of the replica-state table (increasing over the store's life).
    next_sub_id: std::sync::atomic::AtomicU64,
    /// Set by the first failed flush (the node's, shared with the binlog side): no flush is tried after it.
    health: Arc<StorageHealth>,
}

fn user_table(name: &str) -> TableDefinition<'_, &'static str, &'static [u8]> {
    TableDefinition::new(name)
}

fn read_coord(txn: &ReadTransaction) -> Result<Option<BinlogCoord>, StoreError> {
    let meta = txn.open_table(META).map_err(redb_err)?;
    let value = meta.get(APPLIED_THROUGH).map_err(redb_err)?;
    Ok(value.and_then(|v| serde_json::from_slice(v.value()).ok()))
}

/// A flush in progress: the frozen in-memory layers, written to redb by [`Flush::write`].
pub struct Flush<'a> {
    store: &'a Store,
    _one_at_a_time: MutexGuard<'a, ()>,
    /// Every frozen layer at the flush's start, oldest first.
    layers: Vec<Arc<MemTable>>,
}

impl Flush<'_> {
    /// The coordinate the store will be at once this flush is written (None: nothing applied since the last flush).
    pub fn through(&self) -> Option<BinlogCoord> {
        self.layers.iter().rev().find_map(|layer| layer.through)
    }

    /// Writes the frozen changes to redb (durably or not) with their coordinate; returns a read snapshot of
    /// exactly that state. A failure is fail-stop: the store's health is set and every later flush is refused
    /// (the frozen changes stay readable in memory; the binlog still has them for the restart's replay).
    pub fn write(self, durable: bool) -> Result<(Option<BinlogCoord>, ReadTransaction), StoreError> {
        let health = self.store.health.clone();
        if let Some(why) = health.failure() {
            return Err(StoreError::Failed(why));
        }
        self.write_to_redb(durable).map_err(|e| StoreError::Failed(health.fail(format!("store flush: {e}"))))
    }

    fn write_to_redb(self, durable: bool) -> Result<(Option<BinlogCoord>, ReadTransaction), StoreError> {
        let db = &self.store.db;
        let mut txn = db.begin_write().map_err(redb_err)?;
        txn.set_durability(if durable { Durability::Immediate } else { Durability::None }).map_err(redb_err)?;
        {
            // Oldest layer first: a row in several layers ends with its newest image.
            for layer in &self.layers {
                for (table, rows) in &layer.rows {
                    let name = format!("{USER_PREFIX}{table}");
                    let mut t = txn.open_table(user_table(&name)).map_err(redb_err)?;
                    for (key, row) in rows {
                        match row {
                            Some(row) => {
                                t.insert(key.as_str(), row_bytes(row).as_slice()).map_err(redb_err)?;
                            }
                            None => {
                                t.remove(key.as_str()).map_err(redb_err)?;
                            }
                        }
                    }
                }
            }
            let replicated: Vec<&(u64, Gtid)> = self.layers.iter().flat_map(|layer| &layer.replicated).collect();
            if !replicated.is_empty() {
                let mut state = txn.open_table(REPLICA_STATE).map_err(redb_err)?;
                let mut newest: BTreeMap<u32, u64> = BTreeMap::new();
                for (sub_id, g) in replicated {
                    state.insert((g.domain, *sub_id), (g.server, g.seq)).map_err(redb_err)?;
                    newest.insert(g.domain, *sub_id);
                }
                // Older rows of a domain are garbage once a newer one is in the same durable state.
                for (domain, sub_id) in newest {
                    state.retain_in((domain, 0)..(domain, sub_id), |_, _| false).map_err(redb_err)?;
                }
            }
            if let Some(through) = self.through() {
                let mut meta = txn.open_table(META).map_err(redb_err)?;
                let coord = serde_json::to_vec(&through).expect("coordinates serialize");
                meta.insert(APPLIED_THROUGH, coord.as_slice()).map_err(redb_err)?;
            }
        }
        // An injected fault aborts the transaction, as a failed fsync of redb's commit would leave it.
        fault::check(sites::STORE_FLUSH)?;
        txn.commit().map_err(redb_err)?;
        let snapshot = db.begin_read().map_err(redb_err)?;
        let through = read_coord(&snapshot)?;
        // Flushes are one at a time and only they remove layers, so this flush's layers are still the oldest
        // (snapshots taken meanwhile only added newer ones).
        let mut layers = self.store.layers.write();
        debug_assert!(layers.frozen.iter().zip(&self.layers).all(|(a, b)| Arc::ptr_eq(a, b)));
        layers.frozen.drain(..self.layers.len());
        Ok((through, snapshot))
    }
}

impl Store {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with_health(path, Arc::new(StorageHealth::new()))
    }

    /// Opens the store sharing the node's storage health (a failed flush fails the node).
    pub fn open_with_health(path: &Path, health: Arc<StorageHealth>) -> Result<Self, StoreError> {
        Self::open_on(&*vfs::real(), path, health)
    }

    /// [`Store::open_with_health`] on the file layer `fs`. A new store file is made durable in its directory
    /// before anything is written to it.
    pub fn open_on(fs: &dyn Fs, path: &Path, health: Arc<StorageHealth>) -> Result<Self, StoreError> {
        let existed = fs.exists(path);
        let backend: Box<dyn redb::StorageBackend> = match fs.store_backend(path)? {
            Some(backend) => backend,
            None => {
                let file =
                    std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
                Box::new(redb::backends::FileBackend::new(file).map_err(redb_err)?)
            }
        };
        let (backend, fence) = FencedBackend::new(backend);
        let db = redb::Builder::new().create_with_backend(backend).map_err(redb_err)?;
        if !existed {
            fs.sync_dir(vfs::parent_dir(path))?;
        }
        let txn = db.begin_write().map_err(redb_err)?;
        txn.open_table(META).map_err(redb_err)?;
        txn.open_table(REPLICA_STATE).map_err(redb_err)?;
        txn.commit().map_err(redb_err)?;
        let last_sub_id = {
            let read = db.begin_read().map_err(redb_err)?;
            let state = read.open_table(REPLICA_STATE).map_err(redb_err)?;
            let mut max = 0;
            for entry in state.iter().map_err(redb_err)? {
                max = max.max(entry.map_err(redb_err)?.0.value().1);
            }
            max
        };
        Ok(Store {
            db,
            fence,
            layers: RwLock::new(Layers::default()),
            flush_lock: Mutex::new(()),
            next_sub_id: std::sync::atomic::AtomicU64::new(last_sub_id + 1),
            health,
        })
    }

    /// gtid_slave_pos as the store holds it: per domain, the replica-state row with the highest sub_id.
    pub fn replica_position(&self) -> Result<GtidPosition, StoreError> {
        let mut newest: BTreeMap<u32, (u64, Gtid)> = BTreeMap::new();
        {
            let read = self.db.begin_read().map_err(redb_err)?;
            let state = read.open_table(REPLICA_STATE).map_err(redb_err)?;
            for entry in state.iter().map_err(redb_err)? {
                let (k, v) = entry.map_err(redb_err)?;
                let ((domain, sub_id), (server, seq)) = (k.value(), v.value());
                newest.insert(domain, (sub_id, Gtid::new(domain, server, seq)));
            }
        }
        let layers = self.layers.read();
        let unflushed = layers.frozen.iter().flat_map(|f| f.replicated.iter()).chain(&layers.active.replicated);
        for (sub_id, g) in unflushed {
            if newest.get(&g.domain).is_none_or(|(s, _)| s < sub_id) {
                newest.insert(g.domain, (*sub_id, *g));
            }
        }
        Ok(GtidPosition::from_gtids(newest.into_values().map(|(_, g)| g)))
    }

    /// Replaces gtid_slave_pos (CHANGE MASTER with an explicit position), durably. Replication must be stopped.
    pub fn set_replica_position(&self, position: &GtidPosition) -> Result<(), StoreError> {
        self.flush(false)?;
        let _one_at_a_time = self.flush_lock.lock();
        self.write_replica_position(position)
            .map_err(|e| StoreError::Failed(self.health.fail(format!("replica state write: {e}"))))
    }

    /// RESET MASTER: the store's content stays as it is, its binlog coordinate moves (durably) onto the new
    /// binlog's `through`. Everything applied is made durable first.
    pub fn rebase(&self, through: BinlogCoord) -> Result<(), StoreError> {
        self.flush(true)?;
        let _one_at_a_time = self.flush_lock.lock();
        self.layers.write().active.through = Some(through);
        let write = || -> Result<(), StoreError> {
            let txn = self.db.begin_write().map_err(redb_err)?;
            {
                let mut meta = txn.open_table(META).map_err(redb_err)?;
                let coord = serde_json::to_vec(&through).expect("coordinates serialize");
                meta.insert(APPLIED_THROUGH, coord.as_slice()).map_err(redb_err)?;
                // The data stays, its binlog goes: the binlog no longer holds the store's history.
                meta.remove(HISTORY_IN_BINLOG).map_err(redb_err)?;
            }
            fault::check(sites::STORE_FLUSH)?;
            txn.commit().map_err(redb_err)
        };
        write().map_err(|e| StoreError::Failed(self.health.fail(format!("store rebase: {e}"))))
    }

    /// A rewind's store part, in one durable redb commit: every row in `rows` set to its image (None: removed),
    /// the tables of `drop_if_empty` dropped when that leaves them empty, the binlog coordinate moved back to
    /// `through` (the cut), gtid_slave_pos replaced by `replica_position`, and
    /// `marker` (the rewind's archive name) recorded, so a restart knows this part is done. Everything applied
    /// before is flushed first (the rewind's changes go on top of it).
    pub fn rewind(
        &self,
        rows: &[(String, String, Option<Row>)],
        drop_if_empty: &[String],
        through: BinlogCoord,
        replica_position: &GtidPosition,
        marker: &str,
    ) -> Result<(), StoreError> {
        self.rewound_commit("rewind", through, replica_position, marker, |txn| {
            for (table, key, row) in rows {
                put_row(txn, table, key, row.as_ref())?;
            }
            for table in drop_if_empty {
                let name = format!("{USER_PREFIX}{table}");
                let empty = match txn.open_table(user_table(&name)) {
                    Ok(t) => t.is_empty().map_err(redb_err)?,
                    Err(e) => return Err(redb_err(e)),
                };
                if empty {
                    txn.delete_table(user_table(&name)).map_err(redb_err)?;
                }
            }
            Ok(())
        })
    }

    /// A rewind's store part, either way ([`Store::rewind`], [`Store::rebuild`]): everything applied flushed first,
    /// then one durable redb commit of what `change` does to the user tables and of the rewind's record
    /// (`record_rewound`). A failure there fails the store (`what` names the part in its reason).
    fn rewound_commit(
        &self,
        what: &str,
        through: BinlogCoord,
        replica_position: &GtidPosition,
        marker: &str,
        change: impl FnOnce(&redb::WriteTransaction) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.flush(false)?;
        let _one_at_a_time = self.flush_lock.lock();
        let write = || -> Result<(), StoreError> {
            let mut txn = self.db.begin_write().map_err(redb_err)?;
            txn.set_durability(Durability::Immediate).map_err(redb_err)?;
            change(&txn)?;
            self.record_rewound(&txn, through, replica_position, marker)?;
            fault::check(sites::STORE_FLUSH)?;
            txn.commit().map_err(redb_err)
        };
        write().map_err(|e| StoreError::Failed(self.health.fail(format!("store {what}: {e}"))))
    }

    /// The end of a rewind's store part, in its commit `txn`: the replica state is `replica_position`, the store
    /// covers the binlog through `through`, and `marker` says which rewind did it.
    fn record_rewound(
        &self,
        txn: &redb::WriteTransaction,
        through: BinlogCoord,
        replica_position: &GtidPosition,
        marker: &str,
    ) -> Result<(), StoreError> {
        let mut state = txn.open_table(REPLICA_STATE).map_err(redb_err)?;
        state.retain(|_, _| false).map_err(redb_err)?;
        for g in replica_position.iter() {
            let sub_id = self.next_sub_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            state.insert((g.domain, sub_id), (g.server, g.seq)).map_err(redb_err)?;
        }
        let mut meta = txn.open_table(META).map_err(redb_err)?;
        let coord = serde_json::to_vec(&through).expect("coordinates serialize");
        meta.insert(APPLIED_THROUGH, coord.as_slice()).map_err(redb_err)?;
        meta.insert(REWOUND_BY, marker.as_bytes()).map_err(redb_err)?;
        Ok(())
    }

    /// A rewind's store part by replay, in one durable redb commit: every user table emptied, the row images of
    /// `kept` (the binlog's transactions from its first one to the cut, in order) applied, then as
    /// [`Store::rewind`]. Only for a store whose whole history the binlog holds ([`Store::history_in_binlog`]).
    pub fn rebuild(
        &self,
        kept: &mut dyn Iterator<Item = Result<Vec<RowChange>, String>>,
        through: BinlogCoord,
        replica_position: &GtidPosition,
        marker: &str,
    ) -> Result<(), StoreError> {
        self.rewound_commit("rebuild", through, replica_position, marker, |txn| {
            let tables: Vec<String> = txn
                .list_tables()
                .map_err(redb_err)?
                .map(|h| h.name().to_string())
                .filter(|n| n.starts_with(USER_PREFIX))
                .collect();
            for name in &tables {
                txn.delete_table(user_table(name)).map_err(redb_err)?;
            }
            for changes in kept {
                let changes = changes.map_err(|e| StoreError::Io(std::io::Error::other(e)))?;
                for c in changes {
                    put_row(txn, &c.table, &c.key, c.after.as_ref())?;
                }
            }
            Ok(())
        })
    }

    /// Records, durably, that everything the store holds came from the binlog from its first file on (a new store
    /// filled by replaying a binlog that starts at file 1 with an empty GTID list). A rewind may then put the store
    /// back by replay when before images are missing.
    pub fn mark_history_in_binlog(&self) -> Result<(), StoreError> {
        let txn = self.db.begin_write().map_err(redb_err)?;
        {
            let mut meta = txn.open_table(META).map_err(redb_err)?;
            meta.insert(HISTORY_IN_BINLOG, b"1".as_slice()).map_err(redb_err)?;
        }
        txn.commit().map_err(redb_err)
    }

    /// Whether the binlog holds the store's whole history ([`Store::mark_history_in_binlog`]).
    pub fn history_in_binlog(&self) -> Result<bool, StoreError> {
        let read = self.db.begin_read().map_err(redb_err)?;
        let meta = read.open_table(META).map_err(redb_err)?;
        Ok(meta.get(HISTORY_IN_BINLOG).map_err(redb_err)?.is_some())
    }

    /// The archive name of the last rewind whose store part is done ([`Store::rewind`]).
    pub fn rewound_by(&self) -> Result<Option<String>, StoreError> {
        let read = self.db.begin_read().map_err(redb_err)?;
        let meta = read.open_table(META).map_err(redb_err)?;
        let value = meta.get(REWOUND_BY).map_err(redb_err)?;
        Ok(value.map(|v| String::from_utf8_lossy(v.value()).into_owned()))
    }

    /// Records GTIDs replication passed over without applying (skip counter, domain filters) in the replica
    /// state, durably, each as the newest row of its domain. The store is flushed first, so that replaying the
    /// binlog after a crash cannot put an older applied GTID of the domain above them.
    pub fn add_replica_gtids(&self, gtids: &[Gtid]) -> Result<(), StoreError> {
        self.flush(false)?;
        let _one_at_a_time = self.flush_lock.lock();
        let write = || -> Result<(), StoreError> {
            let txn = self.db.begin_write().map_err(redb_err)?;
            {
                let mut state = txn.open_table(REPLICA_STATE).map_err(redb_err)?;
                for g in gtids {
                    let sub_id = self.next_sub_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    state.insert((g.domain, sub_id), (g.server, g.seq)).map_err(redb_err)?;
                }
            }
            fault::check(sites::REPLICA_STATE)?;
            txn.commit().map_err(redb_err)
        };
        write().map_err(|e| StoreError::Failed(self.health.fail(format!("replica state write: {e}"))))
    }

    fn write_replica_position(&self, position: &GtidPosition) -> Result<(), StoreError> {
        let txn = self.db.begin_write().map_err(redb_err)?;
        {
            let mut state = txn.open_table(REPLICA_STATE).map_err(redb_err)?;
            state.retain(|_, _| false).map_err(redb_err)?;
            for g in position.iter() {
                let sub_id = self.next_sub_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                state.insert((g.domain, sub_id), (g.server, g.seq)).map_err(redb_err)?;
            }
        }
        fault::check(sites::REPLICA_STATE)?;
        txn.commit().map_err(redb_err)
    }

    /// Writes nothing more to the store's file, not even what closing it would (redb makes its pending
    /// non-durable commits durable at close): for a node that cannot make its binlog durable through them.
    pub fn fence(&self) {
        self.fence.raise();
    }

    /// The storage health this store shares with its node.
    pub fn health(&self) -> &Arc<StorageHealth> {
        &self.health
    }

    /// The binlog coordinate the store's content corresponds to (None for a new store).
    pub fn applied_through(&self) -> Result<Option<BinlogCoord>, StoreError> {
        if let Some(c) = self.layers.read().through() {
            return Ok(Some(c));
        }
        read_coord(&self.db.begin_read().map_err(redb_err)?)
    }

    /// Rows in the in-memory layers in use now.
    pub fn unflushed_rows(&self) -> usize {
        let layers = self.layers.read();
        layers.active.len + layers.frozen.iter().map(|f| f.len).sum::<usize>()
    }

    /// Reads rows; absent rows (or tables) are None.
    pub fn read_rows(&self, keys: &[(&str, &str)]) -> Result<Vec<Option<Row>>, StoreError> {
        let mut out: Vec<Option<Option<Row>>> = Vec::with_capacity(keys.len());
        // Holding the layers' read lock until redb's snapshot is open means a flush cannot slip in between.
        let layers = self.layers.read();
        let mut missing = false;
        for (table, key) in keys {
            let hit = layers.get(table, key);
            missing |= hit.is_none();
            out.push(hit.cloned());
        }
        let snapshot = if missing { Some(self.db.begin_read().map_err(redb_err)?) } else { None };
        drop(layers);
        let mut rows = Vec::with_capacity(keys.len());
        for ((table, key), hit) in keys.iter().zip(out) {
            match hit {
                Some(row) => rows.push(row),
                None => rows.push(Self::read_durable(snapshot.as_ref().expect("opened for misses"), table, key)?),
            }
        }
        Ok(rows)
    }

    fn read_durable(txn: &ReadTransaction, table: &str, key: &str) -> Result<Option<Row>, StoreError> {
        let name = format!("{USER_PREFIX}{table}");
        let t = match txn.open_table(user_table(&name)) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(redb_err(e)),
        };
        let row = t.get(key).map_err(redb_err)?;
        row.map(|bytes| row_from_bytes(bytes.value())).transpose().map_err(|e| StoreError::BadRow {
            table: table.to_string(),
            key: key.to_string(),
            reason: e.to_string(),
        })
    }

    pub fn get(&self, table: &str, key: &str) -> Result<Option<Row>, StoreError> {
        Ok(self.read_rows(&[(table, key)])?.pop().flatten())
    }

    /// Applies transactions' row images in order and moves the store to `through` (in memory; see [`Store::flush`]).
    pub fn apply<'a>(&self, txns: impl IntoIterator<Item = &'a [RowChange]>, through: BinlogCoord) {
        self.apply_group(txns.into_iter().map(|c| (c, None)), through)
    }

    /// Like [`Store::apply`], each transaction with the GTID to record in the replica state when it was applied
    /// by replication: its data and its replica-state row always land in the same flush.
    pub fn apply_group<'a>(
        &self,
        txns: impl IntoIterator<Item = (&'a [RowChange], Option<Gtid>)>,
        through: BinlogCoord,
    ) {
        let mut layers = self.layers.write();
        for (changes, replicated) in txns {
            for change in changes {
                layers.active.insert(&change.table, &change.key, change.after.clone());
            }
            if let Some(gtid) = replicated {
                let sub_id = self.next_sub_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                layers.active.replicated.push((sub_id, gtid));
            }
        }
        debug_assert!(layers.active.through.is_none_or(|t| t <= through), "applies go forward in the binlog");
        layers.active.through = Some(through);
    }

    /// Freezes the in-memory changes for writing to redb. Call it where the coordinate must be consistent with
    /// something else (e.g. under the binlog lock); do the [`Flush::write`] after letting go of that lock.
    pub fn begin_flush(&self) -> Flush<'_> {
        let guard = self.flush_lock.lock();
        if self.health.is_failed() {
            // A failed flush's frozen layers stay where reads find them; this flush will be refused.
            return Flush { store: self, _one_at_a_time: guard, layers: Vec::new() };
        }
        let mut layers = self.layers.write();
        layers.freeze_active();
        Flush { store: self, _one_at_a_time: guard, layers: layers.frozen.clone() }
    }

    /// A consistent view of everything applied so far, without writing anything nor waiting for a flush in
    /// progress: the in-memory changes are frozen (a move) and kept with a redb read snapshot. Call it where
    /// the view must match something else (under the binlog lock); read it after letting go of that lock.
    pub fn snapshot(&self) -> Result<StoreSnapshot, StoreError> {
        let mut layers = self.layers.write();
        layers.freeze_active();
        // Opened under the layers' lock: a flush removes its layers only after its redb commit, so every change
        // is in `layers`, in `durable`, or in both (seen twice, a row image gives the same answer).
        let durable = self.db.begin_read().map_err(redb_err)?;
        Ok(StoreSnapshot { layers: layers.frozen.clone(), durable })
    }

    /// Flushes everything applied so far; `durable` makes it a checkpoint. Returns the coordinate covered.
    pub fn flush(&self, durable: bool) -> Result<Option<BinlogCoord>, StoreError> {
        Ok(self.begin_flush().write(durable)?.0)
    }

    /// Makes everything applied so far durable; returns the coordinate it is durable through.
    pub fn checkpoint(&self) -> Result<Option<BinlogCoord>, StoreError> {
        self.flush(true)
    }

    /// Per user table: row count and order-independent checksum, of everything applied so far.
    pub fn checksums(&self) -> Result<BTreeMap<String, TableChecksum>, StoreError> {
        self.snapshot()?.checksums()
    }

    /// Every row of a table, in key order (for tests and inspection).
    pub fn scan(&self, table: &str) -> Result<Vec<(String, Row)>, StoreError> {
        let (_, txn) = self.begin_flush().write(false)?;
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

/// A consistent view of the store at one moment ([`Store::snapshot`]): the in-memory layers frozen then, over a
/// redb read snapshot. Holding it holds their memory (the layers stay until the next flush in any case).
pub struct StoreSnapshot {
    /// Oldest first.
    layers: Vec<Arc<MemTable>>,
    durable: ReadTransaction,
}

impl StoreSnapshot {
    /// Per user table: row count and order-independent checksum. The same answer a flush followed by a scan of
    /// redb would give: a table a flush would create (even if only deletions went to it) is listed, with 0 rows.
    pub fn checksums(&self) -> Result<BTreeMap<String, TableChecksum>, StoreError> {
        // The newest image of every row held in memory (oldest layer first, so newer images replace older ones).
        let mut in_memory: BTreeMap<&str, HashMap<&str, Option<&Row>>> = BTreeMap::new();
        for layer in &self.layers {
            for (table, rows) in &layer.rows {
                let newest = in_memory.entry(table.as_str()).or_default();
                for (key, row) in rows {
                    newest.insert(key.as_str(), row.as_ref());
                }
            }
        }
        let mut out: BTreeMap<String, TableChecksum> = BTreeMap::new();
        for handle in self.durable.list_tables().map_err(redb_err)? {
            let Some(name) = handle.name().strip_prefix(USER_PREFIX) else {
                continue;
            };
            let full = handle.name().to_string();
            let table = self.durable.open_table(user_table(&full)).map_err(redb_err)?;
            let newer = in_memory.get(name);
            let mut sum = TableChecksum::default();
            for entry in table.iter().map_err(redb_err)? {
                let (k, v) = entry.map_err(redb_err)?;
                if !newer.is_some_and(|rows| rows.contains_key(k.value())) {
                    sum.add(k.value(), v.value());
                }
            }
            out.insert(name.to_string(), sum);
        }
        for (table, rows) in in_memory {
            let sum = out.entry(table.to_string()).or_default();
            for (key, row) in rows {
                if let Some(row) = row {
                    sum.add(key, &row_bytes(row));
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::Value;

    /// A change of row `key` of table `t` to `{n}` (None: its deletion); the clone tests' too.
    pub(super) fn change(key: &str, n: Option<i64>) -> RowChange {
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
        store.apply([&t1[..], &t2[..]], through);
        assert_eq!(store.get("t", "a").unwrap(), None);
        assert_eq!(store.get("t", "b").unwrap().unwrap()["n"], Value::Int(2));
        assert_eq!(store.get("missing", "x").unwrap(), None);
        assert_eq!(store.applied_through().unwrap(), Some(through));
        assert_eq!(store.checkpoint().unwrap(), Some(through));
        // After the flush the rows come from redb, with the same answers.
        assert_eq!(store.get("t", "a").unwrap(), None);
        assert_eq!(store.get("t", "b").unwrap().unwrap()["n"], Value::Int(2));
        assert_eq!(store.unflushed_rows(), 0);
    }

    #[test]
    fn a_durable_flush_survives_reopening_and_later_applies_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        {
            let store = Store::open(&path).unwrap();
            store.apply([&[change("a", Some(1))][..]], BinlogCoord { file_seq: 1, offset: 10 });
            store.checkpoint().unwrap();
            store.apply([&[change("a", Some(2))][..]], BinlogCoord { file_seq: 1, offset: 20 });
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.applied_through().unwrap(), Some(BinlogCoord { file_seq: 1, offset: 10 }));
        assert_eq!(store.get("t", "a").unwrap().unwrap()["n"], Value::Int(1));
    }

    #[test]
    fn the_replica_state_is_one_row_per_domain_once_flushed_and_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        {
            let store = Store::open(&path).unwrap();
            let c = BinlogCoord { file_seq: 1, offset: 10 };
            let t = [change("a", Some(1))];
            store.apply_group(
                [(&t[..], Some(Gtid::new(1, 5, 7))), (&t[..], Some(Gtid::new(1, 5, 8))), (&t[..], None)],
                c,
            );
            store.apply_group([(&t[..], Some(Gtid::new(2, 6, 3)))], c);
            assert_eq!(store.replica_position().unwrap().to_string(), "1-5-8,2-6-3", "unflushed rows count too");
            store.checkpoint().unwrap();
            let read = store.db.begin_read().unwrap();
            assert_eq!(read.open_table(REPLICA_STATE).unwrap().iter().unwrap().count(), 2, "older rows were collected");
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.replica_position().unwrap().to_string(), "1-5-8,2-6-3");
        store.set_replica_position(&"0-1-4".parse().unwrap()).unwrap();
        assert_eq!(store.replica_position().unwrap().to_string(), "0-1-4");
    }

    #[test]
    fn checksums_do_not_depend_on_write_order() {
        let dir = tempfile::tempdir().unwrap();
        let a = Store::open(&dir.path().join("a.redb")).unwrap();
        let b = Store::open(&dir.path().join("b.redb")).unwrap();
        let c = BinlogCoord { file_seq: 1, offset: 1 };
        let rows: Vec<RowChange> = (0..50).map(|i| change(&format!("k{i}"), Some(i))).collect();
        a.apply([&rows[..]], c);
        let reversed: Vec<RowChange> = rows.iter().rev().cloned().collect();
        b.apply([&reversed[..]], c);
        assert_eq!(a.checksums().unwrap(), b.checksums().unwrap());
        assert_eq!(a.checksums().unwrap()["t"].rows, 50);
        b.apply([&[change("k1", Some(7))][..]], c);
        assert_ne!(a.checksums().unwrap(), b.checksums().unwrap());
    }

    fn coord(offset: u64) -> BinlogCoord {
        BinlogCoord { file_seq: 1, offset }
    }

    /// A snapshot's checksums are those of a flush and a scan of redb, whatever mix of flushed, frozen and active
    /// changes the store holds (rows updated, deleted, and a table only deletions went to); and taking them writes
    /// nothing: the rows stay in memory and redb is as before.
    #[test]
    fn snapshot_checksums_equal_flushed_ones_and_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        let rows: Vec<RowChange> = (0..20).map(|i| change(&format!("k{i}"), Some(i))).collect();
        store.apply([&rows[..]], coord(10));
        store.checkpoint().unwrap();
        store.apply([&[change("k1", Some(100)), change("k2", None)][..]], coord(20));
        let frozen = store.snapshot().unwrap();
        store.apply([&[change("k1", Some(200)), change("k3", None), change("new", Some(5))][..]], coord(30));
        let gone = RowChange { table: "only_deleted".into(), ..change("x", None) };
        store.apply([&[gone][..]], coord(40));
        let unflushed = store.unflushed_rows();

        let from_snapshot = store.snapshot().unwrap().checksums().unwrap();
        assert_eq!(store.unflushed_rows(), unflushed, "nothing was flushed");
        let durable = store.db.begin_read().unwrap();
        let t = durable.open_table(user_table("t.t")).unwrap();
        assert!(t.get("new").unwrap().is_none() && t.get("k2").unwrap().is_some(), "redb holds the first flush only");
        assert!(durable.open_table(user_table("t.only_deleted")).is_err(), "no table was created");
        assert_eq!(from_snapshot["t"].rows, 19, "20 rows, one deleted, one added, one deleted again");
        assert_eq!(from_snapshot["only_deleted"].rows, 0);

        store.flush(false).unwrap();
        let flushed = store.begin_flush().write(false).unwrap().1;
        let mut scanned = BTreeMap::new();
        for handle in flushed.list_tables().unwrap().filter(|h| h.name().starts_with(USER_PREFIX)) {
            let name = handle.name().to_string();
            let mut sum = TableChecksum::default();
            for entry in flushed.open_table(user_table(&name)).unwrap().iter().unwrap() {
                let (k, v) = entry.unwrap();
                sum.add(k.value(), v.value());
            }
            scanned.insert(name.strip_prefix(USER_PREFIX).unwrap().to_string(), sum);
        }
        assert_eq!(from_snapshot, scanned);
        // The first snapshot still shows the store as it was when it was taken.
        assert_eq!(frozen.checksums().unwrap()["t"].rows, 19);
        assert!(!frozen.checksums().unwrap().contains_key("only_deleted"));
    }

    /// A snapshot neither waits for a flush in progress nor loses what that flush writes, and changes frozen by
    /// a snapshot reach redb with the next flush.
    #[test]
    fn a_snapshot_taken_during_a_flush_sees_everything_and_its_layer_is_flushed_next() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        store.apply([&[change("a", Some(1))][..]], coord(10));
        let flush = store.begin_flush();
        store.apply([&[change("b", Some(2))][..]], coord(20));
        let during = store.snapshot().unwrap();
        assert_eq!(during.checksums().unwrap()["t"].rows, 2);
        flush.write(false).unwrap();
        assert_eq!(store.unflushed_rows(), 1, "b waits in the snapshot's layer");
        assert_eq!(store.get("t", "b").unwrap().unwrap()["n"], Value::Int(2));
        assert_eq!(store.applied_through().unwrap(), Some(coord(20)));
        assert_eq!(store.checkpoint().unwrap(), Some(coord(20)));
        assert_eq!(store.unflushed_rows(), 0);
        assert_eq!(store.checksums().unwrap(), during.checksums().unwrap());
    }
}

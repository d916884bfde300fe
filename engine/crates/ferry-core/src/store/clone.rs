//! The store's side of a clone. On the donor, a [`CloneSource`]: a [`StoreSnapshot`] read table by table in key
//! order (the in-memory layers merged over redb), with the summary the recipient verifies against. On the
//! recipient, the staging store the chunks are written into (with the progress a resume starts from), and the
//! install: the live store's user tables replaced by the staging store's in one durable redb commit that also
//! records the clone's position, so a restart knows the install is done.

use std::collections::BTreeMap;
use std::ops::Bound;

use redb::{Durability, ReadableDatabase, ReadableTable, TableHandle};

use super::{
    redb_err, row_bytes, user_table, Store, StoreError, StoreSnapshot, TableChecksum, APPLIED_THROUGH,
    HISTORY_IN_BINLOG, META, REPLICA_STATE, USER_PREFIX,
};
use crate::binlog::BinlogCoord;
use crate::clone_chunk::row_chunk_bytes;
use crate::fault::{self, sites};
use crate::gtid::GtidPosition;

/// The clone id of the last install whose store part is done.
const CLONED_BY: &str = "cloned_by";
/// A staging store's progress (JSON, the recipient's own): written with the rows of each chunk.
const CLONE_PROGRESS: &str = "clone_progress";

/// A snapshot a donor streams: the snapshot, and per table the newest in-memory image of every row it holds
/// there (None: deleted), by key.
pub struct CloneSource {
    snapshot: StoreSnapshot,
    in_memory: BTreeMap<String, BTreeMap<String, Option<Vec<u8>>>>,
}

/// What a clone's recipient checks its copy against: every table's rows and checksum, and the chunk bytes of
/// the whole snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloneSummary {
    pub tables: BTreeMap<String, TableChecksum>,
    pub bytes_total: u64,
}

impl CloneSource {
    pub fn new(snapshot: StoreSnapshot) -> Self {
        let mut in_memory: BTreeMap<String, BTreeMap<String, Option<Vec<u8>>>> = BTreeMap::new();
        for layer in &snapshot.layers {
            for (table, rows) in &layer.rows {
                let newest = in_memory.entry(table.clone()).or_default();
                for (key, row) in rows {
                    newest.insert(key.clone(), row.as_ref().map(row_bytes));
                }
            }
        }
        CloneSource { snapshot, in_memory }
    }

    /// The user tables, by name.
    pub fn tables(&self) -> Result<Vec<String>, StoreError> {
        let mut names: Vec<String> = self.in_memory.keys().cloned().collect();
        for handle in self.snapshot.durable.list_tables().map_err(redb_err)? {
            if let Some(name) = handle.name().strip_prefix(USER_PREFIX) {
                names.push(name.to_string());
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Rows of `table` after key `after` (from its first with None), in key order, until `take` returns false.
    pub fn rows_after(
        &self,
        table: &str,
        after: Option<&str>,
        take: &mut dyn FnMut(&str, &[u8]) -> bool,
    ) -> Result<(), StoreError> {
        let lower = match after {
            Some(a) => Bound::Excluded(a),
            None => Bound::Unbounded,
        };
        let empty = BTreeMap::new();
        let memory = self.in_memory.get(table).unwrap_or(&empty);
        let mut mem = memory.range::<str, _>((lower, Bound::Unbounded)).peekable();
        let full = format!("{USER_PREFIX}{table}");
        let durable = match self.snapshot.durable.open_table(user_table(&full)) {
            Ok(t) => Some(t),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(redb_err(e)),
        };
        let mut disk = match &durable {
            Some(t) => Some(t.range::<&str>((lower, Bound::Unbounded)).map_err(redb_err)?),
            None => None,
        };
        let mut next_disk = || -> Result<Option<(String, Vec<u8>)>, StoreError> {
            match disk.as_mut().and_then(|d| d.next()) {
                Some(entry) => {
                    let (k, v) = entry.map_err(redb_err)?;
                    Ok(Some((k.value().to_string(), v.value().to_vec())))
                }
                None => Ok(None),
            }
        };
        let mut on_disk = next_disk()?;
        loop {
            // The smaller key first; on a tie the in-memory image wins (newer) and the disk's is passed over.
            let use_memory = match (&on_disk, mem.peek()) {
                (None, None) => return Ok(()),
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some((dk, _)), Some((mk, _))) => mk.as_str() <= dk.as_str(),
            };
            if use_memory {
                let (key, row) = mem.next().expect("peeked");
                if on_disk.as_ref().is_some_and(|(dk, _)| dk == key) {
                    on_disk = next_disk()?;
                }
                if let Some(row) = row {
                    if !take(key, row) {
                        return Ok(());
                    }
                }
            } else {
                let (key, row) = on_disk.take().expect("present");
                if !take(&key, &row) {
                    return Ok(());
                }
                on_disk = next_disk()?;
            }
        }
    }

    /// Every table's rows and checksum (tables without rows left out), and the chunk bytes of all rows.
    pub fn summary(&self) -> Result<CloneSummary, StoreError> {
        let mut summary = CloneSummary::default();
        for table in self.tables()? {
            let mut sum = TableChecksum::default();
            let mut bytes = 0;
            self.rows_after(&table, None, &mut |key, row| {
                sum.add(key, row);
                bytes += row_chunk_bytes(key, row);
                true
            })?;
            if sum.rows > 0 {
                summary.tables.insert(table, sum);
                summary.bytes_total += bytes;
            }
        }
        Ok(summary)
    }
}

/// Rows written into a staging store and not yet committed: one redb write transaction that takes chunk after
/// chunk (each with the recipient's progress) until [`StagingBatch::commit`] makes them durable at once, rows and
/// progress in the same commit. A batch dropped without its commit leaves the store as its last commit left it,
/// so a resume continues exactly from the last durable point.
pub struct StagingBatch {
    txn: redb::WriteTransaction,
    bytes: u64,
}

impl StagingBatch {
    /// Adds `rows` of `table` and sets the progress a resume starts from to `progress`.
    pub fn stage_rows(&mut self, table: &str, rows: &[(String, Vec<u8>)], progress: &[u8]) -> Result<(), StoreError> {
        let name = format!("{USER_PREFIX}{table}");
        let mut t = self.txn.open_table(user_table(&name)).map_err(redb_err)?;
        for (key, row) in rows {
            t.insert(key.as_str(), row.as_slice()).map_err(redb_err)?;
            self.bytes += row_chunk_bytes(key, row);
        }
        let mut meta = self.txn.open_table(META).map_err(redb_err)?;
        meta.insert(CLONE_PROGRESS, progress).map_err(redb_err)?;
        Ok(())
    }

    /// The chunk bytes of the rows this batch holds.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Makes the batch's rows and its last progress durable, in one commit (one fsync).
    pub fn commit(self) -> Result<(), StoreError> {
        self.txn.commit().map_err(redb_err)
    }
}

impl Store {
    /// A new [`StagingBatch`] of this staging store (durable when committed).
    pub fn stage_batch(&self) -> Result<StagingBatch, StoreError> {
        let mut txn = self.db.begin_write().map_err(redb_err)?;
        txn.set_durability(Durability::Immediate).map_err(redb_err)?;
        Ok(StagingBatch { txn, bytes: 0 })
    }

    /// A staging store: `rows` of `table` written, with the recipient's `progress`, in one durable commit.
    pub fn stage_rows(&self, table: &str, rows: &[(String, Vec<u8>)], progress: &[u8]) -> Result<(), StoreError> {
        let mut batch = self.stage_batch()?;
        batch.stage_rows(table, rows, progress)?;
        batch.commit()
    }

    /// A staging store's progress, as the last [`Store::stage_rows`] wrote it.
    pub fn clone_progress(&self) -> Result<Option<Vec<u8>>, StoreError> {
        let read = self.db.begin_read().map_err(redb_err)?;
        let meta = read.open_table(META).map_err(redb_err)?;
        Ok(meta.get(CLONE_PROGRESS).map_err(redb_err)?.map(|v| v.value().to_vec()))
    }

    /// Makes everything written to a staging store durable.
    pub fn stage_durable(&self) -> Result<(), StoreError> {
        let mut txn = self.db.begin_write().map_err(redb_err)?;
        txn.set_durability(Durability::Immediate).map_err(redb_err)?;
        txn.commit().map_err(redb_err)
    }

    /// A clone's install, in one durable redb commit: every user table replaced by `staging`'s, gtid_slave_pos
    /// set to `position`, the binlog coordinate moved to `through` (the start of the new, empty binlog), the
    /// store no longer filled from its binlog, and `clone_id` recorded ([`Store::cloned_by`]). Everything applied
    /// before is flushed first; a failure fails the store.
    pub fn install_clone(
        &self,
        staging: &Store,
        through: BinlogCoord,
        position: &GtidPosition,
        clone_id: &str,
    ) -> Result<(), StoreError> {
        self.flush(false)?;
        let _one_at_a_time = self.flush_lock.lock();
        let write = || -> Result<(), StoreError> {
            let mut txn = self.db.begin_write().map_err(redb_err)?;
            txn.set_durability(Durability::Immediate).map_err(redb_err)?;
            let old: Vec<String> = txn
                .list_tables()
                .map_err(redb_err)?
                .map(|h| h.name().to_string())
                .filter(|n| n.starts_with(USER_PREFIX))
                .collect();
            for name in &old {
                txn.delete_table(user_table(name)).map_err(redb_err)?;
            }
            let source = staging.db.begin_read().map_err(redb_err)?;
            for handle in source.list_tables().map_err(redb_err)? {
                let name = handle.name().to_string();
                if !name.starts_with(USER_PREFIX) {
                    continue;
                }
                let from = source.open_table(user_table(&name)).map_err(redb_err)?;
                let mut to = txn.open_table(user_table(&name)).map_err(redb_err)?;
                for entry in from.iter().map_err(redb_err)? {
                    let (k, v) = entry.map_err(redb_err)?;
                    to.insert(k.value(), v.value()).map_err(redb_err)?;
                }
            }
            {
                let mut state = txn.open_table(REPLICA_STATE).map_err(redb_err)?;
                state.retain(|_, _| false).map_err(redb_err)?;
                for g in position.iter() {
                    let sub_id = self.next_sub_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    state.insert((g.domain, sub_id), (g.server, g.seq)).map_err(redb_err)?;
                }
                let mut meta = txn.open_table(META).map_err(redb_err)?;
                let coord = serde_json::to_vec(&through).expect("coordinates serialize");
                meta.insert(APPLIED_THROUGH, coord.as_slice()).map_err(redb_err)?;
                meta.remove(HISTORY_IN_BINLOG).map_err(redb_err)?;
                meta.insert(CLONED_BY, clone_id.as_bytes()).map_err(redb_err)?;
            }
            fault::check(sites::STORE_FLUSH)?;
            txn.commit().map_err(redb_err)
        };
        write().map_err(|e| StoreError::Failed(self.health.fail(format!("store clone install: {e}"))))
    }

    /// The clone id of the last install whose store part is done ([`Store::install_clone`]).
    pub fn cloned_by(&self) -> Result<Option<String>, StoreError> {
        let read = self.db.begin_read().map_err(redb_err)?;
        let meta = read.open_table(META).map_err(redb_err)?;
        let value = meta.get(CLONED_BY).map_err(redb_err)?;
        Ok(value.map(|v| String::from_utf8_lossy(v.value()).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::{RowChange, Value};
    use crate::store::tests::change;

    /// The source reads the snapshot in key order whatever mix of flushed and in-memory rows it holds, and its
    /// summary equals the snapshot's checksums; a staging store filled from it installs into another store with
    /// equal checksums, the position and the coordinate.
    #[test]
    fn a_source_streams_in_key_order_and_installs_equal() {
        let dir = tempfile::tempdir().unwrap();
        let donor = Store::open(&dir.path().join("d.redb")).unwrap();
        let rows: Vec<RowChange> = (0..20).map(|i| change(&format!("k{i:02}"), Some(i))).collect();
        donor.apply([&rows[..]], BinlogCoord { file_seq: 1, offset: 10 });
        donor.checkpoint().unwrap();
        donor.apply(
            [&[change("k03", None), change("k05", Some(50)), change("k99", Some(9))][..]],
            BinlogCoord { file_seq: 1, offset: 20 },
        );
        let source = CloneSource::new(donor.snapshot().unwrap());
        let summary = source.summary().unwrap();
        assert_eq!(summary.tables, donor.checksums().unwrap());
        let mut keys = Vec::new();
        let mut staged = Vec::new();
        source
            .rows_after("t", Some("k04"), &mut |k, r| {
                keys.push(k.to_string());
                staged.push((k.to_string(), r.to_vec()));
                true
            })
            .unwrap();
        assert_eq!(keys.first().map(String::as_str), Some("k05"));
        assert_eq!(keys.last().map(String::as_str), Some("k99"));
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let mut head = Vec::new();
        source
            .rows_after("t", None, &mut |k, r| {
                if k > "k04" {
                    return false;
                }
                head.push((k.to_string(), r.to_vec()));
                true
            })
            .unwrap();
        assert_eq!(head.len(), 4, "k00..k04 without the deleted k03");

        let staging = Store::open(&dir.path().join("s.redb")).unwrap();
        staging.stage_rows("t", &head, b"one").unwrap();
        staging.stage_rows("t", &staged, b"two").unwrap();
        assert_eq!(staging.clone_progress().unwrap().as_deref(), Some(&b"two"[..]));
        staging.stage_durable().unwrap();
        let live = Store::open(&dir.path().join("l.redb")).unwrap();
        live.apply(
            [&[RowChange { table: "old".into(), ..change("x", Some(1)) }][..]],
            BinlogCoord { file_seq: 3, offset: 5 },
        );
        let through = BinlogCoord { file_seq: 1, offset: 40 };
        let position: GtidPosition = "0-1-7".parse().unwrap();
        live.install_clone(&staging, through, &position, "c1").unwrap();
        assert_eq!(live.checksums().unwrap(), summary.tables);
        assert_eq!(live.applied_through().unwrap(), Some(through));
        assert_eq!(live.replica_position().unwrap(), position);
        assert_eq!(live.cloned_by().unwrap().as_deref(), Some("c1"));
    }

    /// A staging batch is durable only through its commit, rows and progress together: a batch lost before its
    /// commit (a crash between durable points) leaves the store, reopened, at the last committed batch — its
    /// rows and its progress — and the copy continued from there ends equal to one made in one go.
    #[test]
    fn a_batch_lost_before_its_commit_leaves_the_last_durable_one() {
        let dir = tempfile::tempdir().unwrap();
        let row =
            |i: usize| (format!("k{i:03}"), crate::row::row_bytes(&[("n".to_string(), Value::Int(i as i64))].into()));
        let rows: Vec<(String, Vec<u8>)> = (0..30).map(row).collect();
        let path = dir.path().join("s.redb");
        {
            let staging = Store::open(&path).unwrap();
            let mut first = staging.stage_batch().unwrap();
            first.stage_rows("t", &rows[..5], b"5").unwrap();
            first.stage_rows("t", &rows[5..10], b"10").unwrap();
            assert_eq!(first.bytes(), rows[..10].iter().map(|(k, r)| row_chunk_bytes(k, r)).sum::<u64>());
            first.commit().unwrap();
            let mut lost = staging.stage_batch().unwrap();
            lost.stage_rows("t", &rows[10..20], b"20").unwrap();
            drop(lost);
        }
        let staging = Store::open(&path).unwrap();
        assert_eq!(staging.clone_progress().unwrap().as_deref(), Some(&b"10"[..]), "the last durable progress");
        let kept: Vec<String> = staging.scan("t").unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(kept, rows[..10].iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), "its rows, no more");
        let mut rest = staging.stage_batch().unwrap();
        rest.stage_rows("t", &rows[10..], b"30").unwrap();
        rest.commit().unwrap();
        let whole = Store::open(&dir.path().join("w.redb")).unwrap();
        whole.stage_rows("t", &rows, b"30").unwrap();
        assert_eq!(staging.checksums().unwrap(), whole.checksums().unwrap());
        assert_eq!(staging.clone_progress().unwrap().as_deref(), Some(&b"30"[..]));
    }
}

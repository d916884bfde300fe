//! Opening a node: the binlog's tail recovered, the store replayed from its last durable point, the commit
//! pipeline assembled with the listener that publishes each committed group.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::{
    CommitCounters, CommitObserver, EventSummary, Node, NodeConfig, NodeError, PositionWatch, RecoveryReport,
    RECENT_EVENTS_MAX,
};
use crate::admission::WriteGate;
use crate::binlog::event::flags;
use crate::binlog::reader::{read_gtid_list_on, FileReader, Item, TransactionReader};
use crate::binlog::writer::BinlogWriter;
use crate::binlog::{file_name, file_seq, hwm, reset, BinlogCoord, BinlogError, MAGIC};
use crate::commit::{CommitLog, GroupCommit, GroupReport};
use crate::fault::StorageHealth;
use crate::gtid::{Gtid, GtidPosition};
use crate::gtid_alloc::GtidAllocator;
use crate::locks::RowLocks;
use crate::row::RowChange;
use crate::semisync::SemiSync;
use crate::store::Store;

/// Transactions applied between store flushes while replaying the binlog at start-up.
const REPLAY_BATCH_TXNS: usize = 10_000;

impl Node {
    /// Opens the node's data directory: recovers the binlog tail, replays the binlog into the store from its
    /// last durable coordinate, and makes the result durable before serving.
    pub fn open(config: NodeConfig, observer: Option<Arc<dyn CommitObserver>>) -> Result<Arc<Node>, NodeError> {
        config.check()?;
        let fs = config.fs.clone();
        fs.create_dir_all(&config.data_dir).map_err(|e| BinlogError::io(&config.data_dir, e))?;
        let binlog_dir = config.data_dir.join("binlog");
        let health = Arc::new(StorageHealth::new());
        let store = Arc::new(Store::open_on(&*fs, &config.data_dir.join("store.redb"), health.clone())?);
        if let Some(intent) = reset::read_intent(&*fs, &binlog_dir)? {
            tracing::warn!(first_file = %file_name(intent.first_seq), "completing a RESET MASTER a crash interrupted");
            let through = BinlogWriter::start_fresh(
                fs.clone(),
                &binlog_dir,
                config.server_id,
                config.binlog_file_bytes_max,
                intent.first_seq,
            )?;
            store.rebase(through)?;
            reset::clear_intent(&*fs, &binlog_dir)?;
        }
        super::rewind::complete_at_open(&config, &store, &binlog_dir)?;
        super::clone::complete_at_open(&config, &store, &binlog_dir)?;
        let applied = store.applied_through()?;
        let (binlog, tail) = BinlogWriter::open_keeping_on(
            fs.clone(),
            &binlog_dir,
            config.server_id,
            config.binlog_file_bytes_max,
            applied,
            !config.commit.durability.fsyncs(),
        )?;
        if let Some(applied) = applied {
            if applied > binlog.coord() {
                return Err(NodeError::Recovery(format!(
                    "the store is durable through {applied}, past the end of the binlog at {}: the binlog lost acknowledged data; refusing to start",
                    binlog.coord()
                )));
            }
        }
        let recent = Arc::new(Mutex::new(VecDeque::with_capacity(RECENT_EVENTS_MAX)));
        let replayed = replay(&binlog, &store, applied, &recent)?;
        let marks = hwm::read_on(&*fs, &binlog_dir)?;
        let mut log = CommitLog::new(binlog, store.clone(), applied);
        if !config.commit.durability.fsyncs() {
            log = log.with_reservation(hwm::Reservation::new_on(fs.clone(), &binlog_dir, marks.clone()));
        }
        if replayed > 0 || applied.is_none() {
            log.checkpoint(config.commit.durability)?;
        }
        if applied.is_none() && starts_whole(&log.binlog)? {
            store.mark_history_in_binlog()?;
        }
        if replayed > 0 {
            tracing::info!(replayed, from = ?applied.map(|c| c.to_string()), "replayed the binlog into the store");
        }
        let position = log.binlog.state().position().clone();
        let slave_pos = Arc::new(Mutex::new(store.replica_position()?));
        let alloc = Arc::new(GtidAllocator::with_floor(config.server_id, &position, marks.into_iter().collect()));
        // Strict mode compares with the binlog; gtid_slave_pos (which may hold transactions passed over, or a
        // position set by CHANGE MASTER) only raises where seq_nos are handed out, like the high-water mark.
        for gtid in slave_pos.lock().iter() {
            alloc.raise_floor(gtid);
        }
        let counters = Arc::new(CommitCounters::default());
        let watch = Arc::new(PositionWatch {
            end: Mutex::new(log.binlog.coord()),
            position: Mutex::new(position),
            moved: Condvar::new(),
            moved_async: tokio::sync::Notify::new(),
        });
        let listener = Arc::new(GroupListener {
            slave_pos: slave_pos.clone(),
            counters: counters.clone(),
            recent: recent.clone(),
            watch: watch.clone(),
            observer,
        });
        let on_group = {
            let listener = listener.clone();
            Box::new(move |report: &GroupReport| listener.group_committed(report))
        };
        let on_binlogged = Box::new(move |through: BinlogCoord| listener.binlogged(through));
        let mut commit =
            GroupCommit::new(config.commit.clone(), alloc, log, on_group).with_binlogged_hook(on_binlogged);
        let semi_sync = config
            .commit
            .durability
            .waits_for_replicas()
            .then(|| Arc::new(SemiSync::with_clock(config.semi_sync, config.clock.clone())));
        if let Some(semi_sync) = &semi_sync {
            commit = commit.with_semi_sync(semi_sync.clone());
        }
        let recovery = RecoveryReport { tail, replayed_txns: replayed, replayed_from: applied };
        let durable_read_only = super::read_only_flag::read_on(&*fs, &config.data_dir)
            .map_err(|e| BinlogError::io(config.data_dir.join(super::read_only_flag::READ_ONLY_FILE), e))?;
        Ok(Arc::new(Node {
            config,
            semi_sync,
            slave_pos,
            commit,
            store,
            locks: RowLocks::new(),
            writes: WriteGate::new(false),
            counters,
            watch,
            recent,
            recovery,
            stopping: AtomicBool::new(false),
            health,
            durable_read_only: Mutex::new(durable_read_only),
            replicates: AtomicBool::new(false),
        }))
    }
}

/// What the commit pipeline tells the rest of the node: after each committed group, gtid_slave_pos (its
/// replicated members), the counters, the recent-events ring, the visible position and the binlog end, then the
/// waiters (blocking and async) and the server's observer; as soon as a group is in the binlog (before it is
/// visible, with semi-sync `after_sync`), the binlog end the dump streams read up to.
struct GroupListener {
    /// gtid_slave_pos, moved by every replicated transaction in the same step as the visible position.
    slave_pos: Arc<Mutex<GtidPosition>>,
    counters: Arc<CommitCounters>,
    recent: Arc<Mutex<VecDeque<EventSummary>>>,
    /// The visible position and the binlog end, with their waiters.
    watch: Arc<PositionWatch>,
    /// The server's own listener (metrics), told last.
    observer: Option<Arc<dyn CommitObserver>>,
}

impl GroupListener {
    fn group_committed(&self, report: &GroupReport) {
        {
            let mut slave_pos = self.slave_pos.lock();
            for t in report.txns.iter().filter(|t| t.flags & flags::REPLICATED != 0) {
                slave_pos.set(t.committed.gtid);
            }
        }
        let counters = &self.counters;
        counters.commits.fetch_add(report.txns.len() as u64, Ordering::Relaxed);
        counters.groups.fetch_add(1, Ordering::Relaxed);
        counters.fsyncs.fetch_add(u64::from(report.fsync.is_some()), Ordering::Relaxed);
        counters.bytes_written.fetch_add(report.bytes, Ordering::Relaxed);
        {
            let mut recent = self.recent.lock();
            for t in &report.txns {
                let c = &t.committed;
                let entry = summary(c.gtid, c.commit_id, t.flags, c.commit_ts_us, t.start, t.tables.clone(), t.rows);
                push_recent(&mut recent, entry);
            }
        }
        {
            let mut pos = self.watch.position.lock();
            for t in &report.txns {
                pos.set(t.committed.gtid);
            }
        }
        self.watch.advance_end(report.through);
        self.watch.moved.notify_all();
        self.watch.moved_async.notify_waiters();
        if let Some(observer) = &self.observer {
            observer.group_committed(report);
        }
    }

    /// A group is written (and, with durability `local`, fsynced) through `through`.
    fn binlogged(&self, through: BinlogCoord) {
        self.watch.advance_end(through);
        // Dump streams wake on this; waits for a position look again and find nothing new.
        self.watch.moved_async.notify_waiters();
    }
}

fn summary(
    gtid: Gtid,
    commit_id: u64,
    flags: u8,
    commit_ts_us: u64,
    start: BinlogCoord,
    tables: Vec<String>,
    rows: u32,
) -> EventSummary {
    EventSummary {
        seq: 0,
        gtid: gtid.to_string(),
        domain: gtid.domain,
        server_id: gtid.server,
        seq_no: gtid.seq,
        commit_id,
        flags,
        commit_ts_us,
        file: file_name(start.file_seq),
        offset: start.offset,
        tables,
        rows,
    }
}

fn push_recent(recent: &mut VecDeque<EventSummary>, mut entry: EventSummary) {
    entry.seq = recent.back().map_or(1, |e| e.seq + 1);
    if recent.len() == RECENT_EVENTS_MAX {
        recent.pop_front();
    }
    recent.push_back(entry);
}

/// Whether the binlog starts at its very beginning: file 1, with an empty GTID list (nothing purged, no RESET
/// MASTER TO another number).
pub(super) fn starts_whole(binlog: &BinlogWriter) -> Result<bool, NodeError> {
    let first = &binlog.file_names()[0];
    if file_seq(first) != Some(1) {
        return Ok(false);
    }
    Ok(read_gtid_list_on(&**binlog.fs(), &binlog.dir().join(first))?.is_empty())
}

/// Applies to the store every transaction logged after `applied` (all of them for a new store), and fills the
/// recent-events ring from the last file. Returns how many transactions were replayed.
pub(super) fn replay(
    binlog: &BinlogWriter,
    store: &Store,
    applied: Option<BinlogCoord>,
    recent: &Mutex<VecDeque<EventSummary>>,
) -> Result<u64, NodeError> {
    let files = binlog.file_names().to_vec();
    let last_seq = binlog.coord().file_seq;
    let mut replayed = 0u64;
    let mut batch: Vec<(Vec<RowChange>, Option<Gtid>)> = Vec::new();
    let mut through = applied;
    for name in &files {
        let seq = file_seq(name).expect("index holds binlog names");
        let needed = applied.is_none_or(|a| seq >= a.file_seq);
        if !needed && seq != last_seq {
            continue;
        }
        let path = binlog.dir().join(name);
        let mut reader = TransactionReader::new(FileReader::open_at_on(&**binlog.fs(), &path, MAGIC.len() as u64)?);
        for item in reader.by_ref() {
            let Item::Transaction(txn) = item? else {
                continue;
            };
            let end = BinlogCoord { file_seq: seq, offset: txn.end_offset };
            if seq == last_seq {
                let start = BinlogCoord { file_seq: seq, offset: txn.offset };
                let mut tables: Vec<String> = txn.changes.iter().map(|c| c.table.clone()).collect();
                tables.dedup();
                let h = txn.header;
                push_recent(
                    &mut recent.lock(),
                    summary(h.gtid, h.commit_id, h.flags, h.commit_ts_us, start, tables, txn.changes.len() as u32),
                );
            }
            if applied.is_some_and(|a| end <= a) {
                continue;
            }
            let replicated = (txn.header.flags & flags::REPLICATED != 0).then_some(txn.gtid());
            batch.push((txn.changes, replicated));
            through = Some(end);
            replayed += 1;
            if batch.len() >= REPLAY_BATCH_TXNS {
                store.apply_group(batch.iter().map(|(c, r)| (c.as_slice(), *r)), through.expect("set above"));
                store.flush(false)?;
                batch.clear();
            }
        }
    }
    if !batch.is_empty() {
        store.apply_group(batch.iter().map(|(c, r)| (c.as_slice(), *r)), through.expect("set above"));
    }
    Ok(replayed)
}

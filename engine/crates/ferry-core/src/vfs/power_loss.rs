//! The power-loss simulation: a node runs a seeded workload on the simulated disk, the power goes at a seeded
//! I/O operation (inside a write, between a write and its fsync, in a rotation, a checkpoint, an index or
//! high-water mark rewrite, a purge), sometimes again during the restart's recovery, and the node restarted
//! from what survived must:
//! 1. start (a state a crash alone produces is never refused as corruption);
//! 2. hold every acknowledged commit, with its data, in its binlog and its store (with durability `none`, every
//!    one acknowledged before the last checkpoint), and what it holds is a prefix of what was committed;
//! 3. never reuse a GTID: new commits get seq_nos above every acknowledged one and every one in any surviving
//!    file, and no GTID names two different transactions;
//! 4. have a store equal to the binlog's history replayed.
//!
//! `FERRY_SIM_SEED=n` runs one seed (each failure names its seed); `FERRY_SIM_SEEDS=n` runs seeds `0..n` (the
//! default run is [`SEEDS`]); `FERRY_SIM_FIRST=n` starts there.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::binlog::event::{decode_event, Event, GtidEvent};
use crate::binlog::expiry::ExpiryPolicy;
use crate::binlog::reader::{FileReader, Item, TransactionReader};
use crate::binlog::{read_index_on, MAGIC};
use crate::commit::{CommitMode, Durability};
use crate::gtid::{DomainId, Gtid, SeqNo};
use crate::node::{DeleteDomainError, Node, NodeConfig, TxnRequest};
use crate::row::{Row, RowChange, RowOp, Value};
use crate::vfs::sim::{SimFs, SimRng};
use crate::vfs::Fs;

/// Seeds of the default run (each one crash point, a third of them a second one during recovery).
const SEEDS: u64 = 500;
const DATA_DIR: &str = "/node";
/// Domains of client transactions; the last one is written rarely and deleted from the binlog state
/// (DELETE_DOMAIN_ID) once no file holds it.
const CLIENT_DOMAINS: [DomainId; 4] = [0, 1, 2, 3];
/// Domain and server of the replicated transactions (a master's, applied in batches).
const REPLICATED: (DomainId, u32) = (7, 2);
const TABLES: [&str; 3] = ["t0", "t1", "r"];
/// Domain and server of the replicated transactions passed over (the skip counter).
const SKIPPED: (DomainId, u32) = (9, 3);

/// A row's change as the test checks it: table, key, after image.
type Change = (String, String, Option<Row>);

/// One transaction given to the node, in commit order.
#[derive(Debug, Clone)]
struct Txn {
    /// None for a client transaction whose commit was not answered (the power went first).
    gtid: Option<Gtid>,
    changes: Vec<Change>,
    acked: bool,
}

/// Everything one seed does and knows.
struct Run {
    seed: u64,
    rng: SimRng,
    durability: Durability,
    mode: CommitMode,
    file_bytes: u64,
    /// Every transaction the node was given, in order, trimmed to what survived at each restart.
    history: Vec<Txn>,
    /// How many of `history` a checkpoint made durable (what durability `none` must keep).
    durable_len: usize,
    /// The highest seq_no ever acknowledged per domain (of this node's own).
    acked_max: BTreeMap<DomainId, SeqNo>,
    /// Every acknowledged GTID with its changes, over all restarts.
    acked_gtids: BTreeMap<Gtid, Vec<Change>>,
    /// The replicated transactions passed over (the skip counter): the last one acknowledged, the last tried.
    skipped: (SeqNo, SeqNo),
    /// How many of `history` the last DELETE_DOMAIN_ID covered: the deleted domain's transactions among them
    /// are in no binlog file nor in its state any more.
    deleted_through: usize,
    /// How many of `history` the last RESET MASTER covered (they are in the store, in no binlog file).
    reset_through: usize,
    /// A RESET MASTER the crash cut short: how much of `history` it covers, and its new first file.
    reset_attempt: Option<(usize, u64)>,
}

fn seeds() -> Vec<u64> {
    let var = |name: &str| std::env::var(name).ok().map(|v| v.parse::<u64>().expect("a number"));
    if let Some(seed) = var("FERRY_SIM_SEED") {
        return vec![seed];
    }
    let first = var("FERRY_SIM_FIRST").unwrap_or(0);
    (first..first + var("FERRY_SIM_SEEDS").unwrap_or(SEEDS)).collect()
}

#[test]
fn power_loss_at_seeded_crash_points_loses_no_acknowledged_commit_and_reuses_no_gtid() {
    let started = std::time::Instant::now();
    let mut crashes: BTreeMap<String, u64> = BTreeMap::new();
    for seed in seeds() {
        let notes = std::cell::RefCell::new(Vec::new());
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Run::new(seed).run(&notes)));
        let notes = notes.into_inner();
        if let Err(panic) = outcome {
            eprintln!(
                "power-loss simulation failed at seed {seed} ({}): rerun it alone with FERRY_SIM_SEED={seed}",
                notes.join("; ")
            );
            std::panic::resume_unwind(panic);
        }
        for note in notes.iter().filter_map(|n| n.strip_prefix("crash at ")) {
            *crashes.entry(crash_kind(note)).or_default() += 1;
        }
    }
    let points: u64 = crashes.values().sum();
    eprintln!("power-loss simulation: {points} crash points in {:?}: {crashes:?}", started.elapsed());
    if std::env::var("FERRY_SIM_SEED").is_err() {
        assert!(points >= seeds().len() as u64, "every seed crashed at least once");
    }
}

fn config(disk: &SimFs, run: &Run) -> NodeConfig {
    let mut config = NodeConfig::new(1, DATA_DIR);
    config.fs = Arc::new(disk.clone());
    config.commit.durability = run.durability;
    config.commit.mode = run.mode;
    config.binlog_file_bytes_max = run.file_bytes;
    config.checkpoint_interval = std::time::Duration::from_secs(3600);
    config
}

impl Run {
    fn new(seed: u64) -> Self {
        let mut rng = SimRng::new(seed ^ 0x5eed_f00d);
        let durability = if rng.one_in(3) { Durability::None } else { Durability::Local };
        let mode = if rng.one_in(4) { CommitMode::PerTxnFsync } else { CommitMode::Group };
        // Small files rotate often; larger ones hold unsynced tails of several pages.
        let file_bytes = if rng.one_in(2) { 600 + rng.below(3000) } else { 4096 + rng.below(16384) };
        Run {
            seed,
            rng,
            durability,
            mode,
            file_bytes,
            history: Vec::new(),
            durable_len: 0,
            acked_max: BTreeMap::new(),
            acked_gtids: BTreeMap::new(),
            skipped: (0, 0),
            deleted_through: 0,
            reset_through: 0,
            reset_attempt: None,
        }
    }

    /// One seed: one or two cycles of workload, crash, maybe a crash during recovery, restart and checks. What
    /// happened (the settings, each crash's operation) goes to `notes`, for the tally and a failure's message.
    fn run(mut self, notes: &std::cell::RefCell<Vec<String>>) {
        let seed = self.seed;
        let note = |text: String| notes.borrow_mut().push(text);
        note(format!(
            "durability {:?}, commit mode {:?}, files of {} bytes",
            self.durability, self.mode, self.file_bytes
        ));
        let mut disk = SimFs::new();
        let mut node =
            Node::open(config(&disk, &self), None).unwrap_or_else(|e| panic!("seed {seed}: first open: {e}"));
        let cycles = if self.rng.one_in(3) { 2 } else { 1 };
        for _ in 0..cycles {
            let steps = 10 + self.rng.below(80);
            disk.crash_at(disk.ops() + 1 + self.rng.below(steps * 6), self.rng.next_u64());
            let mut alive = self.workload(node, &disk, steps);
            if self.rng.one_in(2) {
                // The process ends without a clean stop before the power goes.
                alive = None;
            }
            disk.crash_now(self.rng.next_u64());
            drop(alive);
            note(format!("crash at {} (operation {})", disk.crash_note().expect("crashed"), disk.ops()));
            let image = self.maybe_crash_in_recovery(&disk, &note);
            let seen = gtids_in_any_file(&image);
            node = Node::open(config(&image, &self), None)
                .unwrap_or_else(|e| panic!("seed {seed}: start-up refused a state a crash produced: {e}"));
            self.check_recovered(&node, &image);
            self.check_new_gtids(&node, &seen);
            disk = image;
        }
    }

    /// The disk `crashed` left, or, a third of the time, what a second power loss during the recovery of that
    /// disk leaves: at any of the operations a whole start-up does (counted on a copy), or just after.
    fn maybe_crash_in_recovery(&mut self, crashed: &SimFs, note: &impl Fn(String)) -> SimFs {
        let seed = self.seed;
        let image = crashed.after_crash().expect("crashed");
        if !self.rng.one_in(3) {
            return image;
        }
        let probe = crashed.after_crash().expect("crashed");
        let recovery_ops = match Node::open(config(&probe, self), None) {
            Ok(_) => probe.ops(),
            Err(e) => panic!("seed {seed}: start-up refused a state a crash produced: {e}"),
        };
        image.crash_at(1 + self.rng.below(recovery_ops + 2), self.rng.next_u64());
        match Node::open(config(&image, self), None) {
            Ok(node) => drop(node),
            Err(e) => assert!(image.crashed(), "seed {seed}: start-up refused a crashed disk's state: {e}"),
        }
        image.crash_now(self.rng.next_u64());
        note(format!("crash at {} during recovery", image.crash_note().expect("crashed")));
        image.after_crash().expect("crashed")
    }

    /// Random commits, replicated batches, checkpoints, rotations, purges, store flushes and clean restarts
    /// until the power goes (or the steps run out).
    fn workload(&mut self, mut node: Arc<Node>, disk: &SimFs, steps: u64) -> Option<Arc<Node>> {
        let trace = std::env::var("FERRY_SIM_SEED").is_ok();
        for _ in 0..steps {
            let step = self.rng.below(100);
            if trace {
                eprintln!("op {:>5} step {step:>2} ({} transactions)", disk.ops(), self.history.len());
            }
            let ok = match step {
                0..=57 => self.client_txn(&node),
                58..=69 => self.replicated_batch(&node),
                70..=79 => node.checkpoint().map(|_| self.durable_len = self.history.len()).is_ok(),
                80..=85 => node.flush_logs().map(|_| self.durable_len = self.history.len()).is_ok(),
                86..=87 => {
                    // A clean stop (final checkpoint, exact high-water mark) and a restart.
                    node.stop();
                    drop(node);
                    if disk.crashed() {
                        return None;
                    }
                    self.durable_len = self.history.len();
                    match Node::open(config(disk, self), None) {
                        Ok(reopened) => node = reopened,
                        Err(e) => {
                            assert!(disk.crashed(), "seed {}: a clean restart failed: {e}", self.seed);
                            return None;
                        }
                    }
                    true
                }
                88..=91 => {
                    let files = node.status().binlog_files;
                    let target = files[files.len().saturating_sub(2)].name.clone();
                    match node.purge_logs_before(&target) {
                        Ok(_) => true,
                        Err(e) => e.to_string().contains("still needed"),
                    }
                }
                92..=93 => node.set_slave_position(&node.slave_position()).is_ok(),
                94..=95 => self.skip(&node),
                96 => {
                    let policy = ExpiryPolicy { expire_logs_seconds: 0, total_bytes_max: self.file_bytes * 2 };
                    node.expire_logs(policy, &[]).is_ok()
                }
                97 => match node.flush_logs_deleting_domains(&[3]) {
                    Ok(_) => {
                        self.durable_len = self.history.len();
                        self.deleted_through = self.history.len();
                        true
                    }
                    Err(DeleteDomainError::InBinlog(_)) => true,
                    Err(DeleteDomainError::Node(_)) => {
                        // Cut short by the crash: the new file leaving the domain out may have made it.
                        self.deleted_through = self.history.len();
                        false
                    }
                },
                98 => self.reset_master(&node),
                // Checksums read a snapshot and write nothing; the non-durable store flush comes after them.
                _ => node.checksums().is_ok() && node.store().flush(false).is_ok(),
            };
            if !ok {
                assert!(disk.crashed(), "seed {}: an operation failed with no crash", self.seed);
                break;
            }
        }
        Some(node)
    }

    /// The state `history` leads to.
    fn model(&self) -> BTreeMap<(String, String), Row> {
        let mut rows = BTreeMap::new();
        for txn in &self.history {
            apply(&mut rows, &txn.changes);
        }
        rows
    }

    fn client_txn(&mut self, node: &Node) -> bool {
        let domain = if self.rng.one_in(8) { 3 } else { CLIENT_DOMAINS[self.rng.below(3) as usize] };
        let mut rows = self.model();
        let mut ops = Vec::new();
        let mut changes = Vec::new();
        for _ in 0..1 + self.rng.below(4) {
            let table = TABLES[self.rng.below(2) as usize].to_string();
            let key = format!("k{}", self.rng.below(10));
            let id = (table.clone(), key.clone());
            let (op, after) = match self.rng.below(10) {
                0..=4 => {
                    let text: String = (0..self.rng.below(200)).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
                    let row: Row = [
                        ("n".to_string(), Value::Int(self.rng.below(1000) as i64)),
                        ("s".to_string(), Value::Text(text)),
                    ]
                    .into();
                    (RowOp::Put { table: table.clone(), key: key.clone(), row: row.clone() }, Some(row))
                }
                5..=6 => (RowOp::Delete { table: table.clone(), key: key.clone() }, None),
                _ => {
                    let by = self.rng.below(9) as i64 + 1;
                    let mut row = rows.get(&id).cloned().unwrap_or_default();
                    let n = match row.get("n") {
                        Some(Value::Int(n)) => *n,
                        _ => 0,
                    };
                    row.insert("n".into(), Value::Int(n + by));
                    (RowOp::Increment { table: table.clone(), key: key.clone(), field: "n".into(), by }, Some(row))
                }
            };
            set(&mut rows, &id, after.clone());
            ops.push(op);
            changes.push((table, key, after));
        }
        let request = TxnRequest { domain: Some(domain), ops, ..Default::default() };
        match node.execute(request, false) {
            Ok(committed) => {
                self.ack(committed.gtid, &changes);
                self.history.push(Txn { gtid: Some(committed.gtid), changes, acked: true });
                true
            }
            Err(_) => {
                self.history.push(Txn { gtid: None, changes, acked: false });
                false
            }
        }
    }

    /// RESET MASTER (keeping the seq_no counters), to a first file numbered past the current one.
    fn reset_master(&mut self, node: &Node) -> bool {
        let first = node.binlog_end().file_seq + 10;
        self.reset_attempt = Some((self.history.len(), first));
        if node.reset_master(first, false).is_err() {
            return false;
        }
        self.reset_attempt = None;
        self.reset_through = self.history.len();
        self.durable_len = self.history.len();
        true
    }

    /// Passes over a replicated transaction in domain [`SKIPPED`] (recorded durably in gtid_slave_pos).
    fn skip(&mut self, node: &Node) -> bool {
        let (domain, server) = SKIPPED;
        let seq = self.skipped.1 + 1;
        self.skipped.1 = seq;
        let ok = node.skip_replicated(&[Gtid::new(domain, server, seq)]).is_ok();
        if ok {
            self.skipped.0 = seq;
        }
        ok
    }

    fn ack(&mut self, gtid: Gtid, changes: &[Change]) {
        if gtid.server == 1 {
            let max = self.acked_max.entry(gtid.domain).or_insert(0);
            *max = (*max).max(gtid.seq);
        }
        if let Some(earlier) = self.acked_gtids.insert(gtid, changes.to_vec()) {
            assert_eq!(earlier, changes, "seed {}: GTID {gtid} names two different transactions", self.seed);
        }
    }

    /// A master's transactions, in one batch (one commit group). A replicated transaction's content depends on
    /// its GTID alone: one lost in a crash is fetched again, the same, from the master.
    fn replicated_batch(&mut self, node: &Node) -> bool {
        let (domain, server) = REPLICATED;
        let next = node.slave_position().get(domain).map_or(1, |g| g.seq + 1);
        let count = 1 + self.rng.below(4);
        let batch: Vec<(GtidEvent, Vec<RowChange>, Vec<Change>)> = (next..next + count)
            .map(|seq| {
                let gtid = Gtid::new(domain, server, seq);
                let changes = replicated_changes(seq);
                let rows = changes
                    .iter()
                    .map(|(table, key, after)| RowChange {
                        table: table.clone(),
                        key: key.clone(),
                        before: None,
                        after: after.clone(),
                    })
                    .collect();
                (GtidEvent { gtid, commit_id: seq, flags: 0, commit_ts_us: 0 }, rows, changes)
            })
            .collect();
        let results =
            node.commit_replicated_batch(batch.iter().map(|(header, rows, _)| (*header, rows.clone())).collect());
        let mut ok = true;
        for ((header, _, changes), result) in batch.into_iter().zip(results) {
            let acked = result.is_ok();
            if acked {
                self.ack(header.gtid, &changes);
            }
            ok &= acked;
            self.history.push(Txn { gtid: Some(header.gtid), changes, acked });
        }
        ok
    }

    /// Checks 2 and 4, and trims `history` to what survived.
    fn check_recovered(&mut self, node: &Node, disk: &SimFs) {
        let seed = self.seed;
        let in_binlog = binlog_transactions(disk);
        let position = node.binlog_position();
        // A RESET MASTER cut short either made it (the restart completed it) or did not.
        if let Some((covers, first)) = self.reset_attempt.take() {
            let oldest = node.status().binlog_files[0].name.clone();
            if crate::binlog::file_seq(&oldest).is_some_and(|seq| seq >= first) {
                self.reset_through = covers;
            }
        }
        // A client transaction not answered before the crash may have reached the disk: it is then the binlog's
        // last, with a GTID nobody was told.
        let known: HashSet<Gtid> = self.history.iter().filter_map(|t| t.gtid).collect();
        if let Some((gtid, changes)) = in_binlog.last().filter(|(g, _)| !known.contains(g)) {
            let last = self.history.last_mut().filter(|t| t.gtid.is_none());
            let last = last.unwrap_or_else(|| panic!("seed {seed}: the binlog holds {gtid}, never committed"));
            assert_eq!(&last.changes, changes, "seed {seed}: {gtid} is not the unanswered commit");
            last.gtid = Some(*gtid);
        }
        let deleted = CLIENT_DOMAINS[3];
        let survived: Vec<bool> = self
            .history
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.gtid.is_some_and(|g| {
                    position.get(g.domain).is_some_and(|p| p.seq >= g.seq)
                        || (g.domain == deleted && i < self.deleted_through)
                        || i < self.reset_through
                })
            })
            .collect();
        let kept = survived.iter().take_while(|s| **s).count();
        assert!(
            survived[kept..].iter().all(|s| !s),
            "seed {seed}: the binlog kept transactions after one it lost (position {position})"
        );
        for (i, txn) in self.history.iter().enumerate().skip(kept) {
            let must = txn.acked && (self.durability.fsyncs() || i < self.durable_len);
            assert!(!must, "seed {seed}: acknowledged commit {:?} was lost ({:?})", txn.gtid, self.durability);
        }
        self.history.truncate(kept);
        self.durable_len = self.durable_len.min(kept);
        // The binlog's files hold the end of that history (purged files held the start).
        let from = kept - in_binlog.len().min(kept);
        assert_eq!(in_binlog.len(), kept - from, "seed {seed}: the binlog holds more than was committed");
        for ((gtid, changes), txn) in in_binlog.iter().zip(&self.history[from..]) {
            assert_eq!(Some(*gtid), txn.gtid, "seed {seed}: the binlog's order differs from the commits'");
            assert_eq!(changes, &txn.changes, "seed {seed}: {gtid} holds other data than was committed");
        }
        // The store equals the history replayed.
        let model = self.model();
        for table in TABLES {
            let stored: BTreeMap<(String, String), Row> = node
                .store()
                .scan(table)
                .unwrap_or_else(|e| panic!("seed {seed}: store scan: {e}"))
                .into_iter()
                .map(|(k, row)| ((table.to_string(), k), row))
                .collect();
            let expected: BTreeMap<(String, String), Row> =
                model.iter().filter(|((t, _), _)| t == table).map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(stored, expected, "seed {seed}: table {table} differs from the binlog's history");
        }
        let replicated = self.history.iter().rev().filter_map(|t| t.gtid).find(|g| g.domain == REPLICATED.0);
        assert_eq!(node.slave_position().get(REPLICATED.0), replicated, "seed {seed}: gtid_slave_pos");
        let skipped = node.slave_position().get(SKIPPED.0).map_or(0, |g| g.seq);
        assert!(
            (self.skipped.0..=self.skipped.1).contains(&skipped),
            "seed {seed}: gtid_slave_pos has {skipped} skipped in domain {}, acknowledged {:?}",
            SKIPPED.0,
            self.skipped
        );
    }

    /// Check 3: new commits in every client domain get seq_nos above all acknowledged and all surviving ones
    /// (they join the history: a second cycle goes on from there).
    fn check_new_gtids(&mut self, node: &Node, seen: &BTreeMap<DomainId, SeqNo>) {
        let seed = self.seed;
        for domain in CLIENT_DOMAINS {
            let row: Row = [("n".to_string(), Value::Int(-1))].into();
            let op = RowOp::Put { table: "t0".into(), key: "after".into(), row: row.clone() };
            let request = TxnRequest { domain: Some(domain), ops: vec![op], ..Default::default() };
            let gtid = node.execute(request, false).unwrap_or_else(|e| panic!("seed {seed}: commit: {e}")).gtid;
            let floor = self.acked_max.get(&domain).max(seen.get(&domain)).copied().unwrap_or(0);
            assert!(gtid.seq > floor, "seed {seed}: {gtid} reuses a seq_no (acknowledged or on disk up to {floor})");
            let changes = vec![("t0".to_string(), "after".to_string(), Some(row))];
            self.ack(gtid, &changes);
            self.history.push(Txn { gtid: Some(gtid), changes, acked: true });
        }
    }
}

/// A crash's operation as the tally counts it: its kind and which file (`write binlog`, `fsync store`…).
fn crash_kind(note: &str) -> String {
    let mut words = note.split_whitespace();
    let kind = words.next().unwrap_or("?");
    let path = words.next().unwrap_or("");
    let what = match Path::new(path).file_name().map(|n| n.to_string_lossy().into_owned()) {
        Some(name) if name.starts_with("ferry-bin.0") => "binlog",
        Some(name) if name.starts_with("ferry-bin.index") => "index",
        Some(name) if name.starts_with("seq-no.hwm") => "hwm",
        Some(name) if name == "store.redb" => "store",
        Some(name) if name.starts_with("reset-master.json") => "reset intent",
        _ => "dir",
    };
    let during = if note.ends_with("during recovery") { " (recovery)" } else { "" };
    format!("{kind} {what}{during}")
}

/// The rows of replicated transaction `seq`.
fn replicated_changes(seq: SeqNo) -> Vec<Change> {
    let row: Row = [("seq".to_string(), Value::Int(seq as i64))].into();
    vec![("r".into(), format!("k{}", seq % 5), Some(row)), ("r".into(), format!("k{}", (seq + 2) % 5), None)]
}

fn set(rows: &mut BTreeMap<(String, String), Row>, id: &(String, String), after: Option<Row>) {
    match after {
        Some(row) => rows.insert(id.clone(), row),
        None => rows.remove(id),
    };
}

fn apply(rows: &mut BTreeMap<(String, String), Row>, changes: &[Change]) {
    for (table, key, after) in changes {
        set(rows, &(table.clone(), key.clone()), after.clone());
    }
}

fn binlog_dir() -> PathBuf {
    Path::new(DATA_DIR).join("binlog")
}

/// Every transaction in the binlog's indexed files, in order.
fn binlog_transactions(disk: &SimFs) -> Vec<(Gtid, Vec<Change>)> {
    let dir = binlog_dir();
    let mut out = Vec::new();
    for name in read_index_on(disk, &dir).expect("index") {
        let reader = FileReader::open_at_on(disk, &dir.join(&name), MAGIC.len() as u64).expect("binlog file");
        for item in TransactionReader::new(reader) {
            if let Item::Transaction(t) = item.unwrap_or_else(|e| panic!("recovered binlog {name}: {e}")) {
                let changes = t.changes.into_iter().map(|c| (c.table, c.key, c.after)).collect();
                out.push((t.header.gtid, changes));
            }
        }
    }
    out
}

/// The highest seq_no per domain of this node's GTID events readable anywhere in any binlog file on the disk
/// (indexed or not, torn tails included), before recovery touches them.
fn gtids_in_any_file(disk: &SimFs) -> BTreeMap<DomainId, SeqNo> {
    let dir = binlog_dir();
    let mut seen = BTreeMap::new();
    for name in disk.list_dir(&dir).unwrap_or_default() {
        let bytes = disk.read(&dir.join(&name)).expect("listed");
        let mut at = 0;
        while at < bytes.len() {
            match decode_event(&bytes[at..]) {
                Ok((event, len)) => {
                    if let Event::Gtid(g) = event {
                        if g.gtid.server == 1 {
                            let max = seen.entry(g.gtid.domain).or_insert(0);
                            *max = g.gtid.seq.max(*max);
                        }
                    }
                    at += len;
                }
                Err(_) => at += 1,
            }
        }
    }
    seen
}

/// Regression tests, one per bug the simulation found, each its case alone with only fsynced bytes surviving.
mod found {
    use super::*;
    use crate::vfs::sim::Loss;

    fn node_without_fsync(disk: &SimFs) -> Arc<Node> {
        let mut config = NodeConfig::new(1, DATA_DIR);
        config.fs = Arc::new(disk.clone());
        config.commit.durability = Durability::None;
        Node::open(config, None).unwrap()
    }

    fn put(node: &Node, key: &str) -> Gtid {
        let row: Row = [("n".to_string(), Value::Int(1))].into();
        let op = RowOp::Put { table: "t0".into(), key: key.into(), row };
        node.execute(TxnRequest { ops: vec![op], ..Default::default() }, false).unwrap().gtid
    }

    fn keys(node: &Node) -> Vec<String> {
        node.store().scan("t0").unwrap().into_iter().map(|(k, _)| k).collect()
    }

    /// After a power loss keeping only fsynced bytes: the node starts, and its store equals its binlog.
    fn restart(disk: &SimFs) -> Arc<Node> {
        disk.set_loss(Loss::Unsynced);
        disk.crash_now(0);
        let after = disk.after_crash().unwrap();
        let node = node_without_fsync(&after);
        let in_binlog: Vec<String> =
            binlog_transactions(&after).into_iter().flat_map(|(_, c)| c.into_iter().map(|(_, k, _)| k)).collect();
        assert_eq!(keys(&node), in_binlog);
        node
    }

    #[test]
    fn a_node_dropped_without_a_stop_fsyncs_its_binlog_before_its_store_closes() {
        // Closing redb makes its non-durable flushes durable: with durability `none` those held commits the
        // binlog had not fsynced, and the restart refused a store durable past the binlog's end.
        let disk = SimFs::new();
        let node = node_without_fsync(&disk);
        put(&node, "a");
        put(&node, "b");
        node.store().flush(false).unwrap();
        drop(node);
        assert_eq!(keys(&restart(&disk)), ["a", "b"]);
    }

    #[test]
    fn a_failed_node_dropped_without_a_stop_fences_its_store() {
        let disk = SimFs::new();
        let node = node_without_fsync(&disk);
        put(&node, "a");
        node.store().flush(false).unwrap();
        node.fail_storage("injected for the test");
        drop(node);
        assert!(keys(&restart(&disk)).is_empty(), "nothing was fsynced, nothing was made durable");
    }

    #[test]
    fn change_master_fsyncs_the_binlog_before_the_replica_states_durable_commit() {
        // The replica state's commit is durable and took the store's unflushed commits with it, past the
        // binlog's fsynced end (durability `none`).
        let disk = SimFs::new();
        let node = node_without_fsync(&disk);
        put(&node, "a");
        node.set_slave_position(&"5-9-3".parse().unwrap()).unwrap();
        let node = restart(&disk);
        assert_eq!(keys(&node), ["a"]);
        assert_eq!(node.slave_position().to_string(), "5-9-3");
    }

    #[test]
    fn a_skipped_transaction_fsyncs_the_binlog_before_its_durable_commit() {
        let disk = SimFs::new();
        let node = node_without_fsync(&disk);
        put(&node, "a");
        node.skip_replicated(&[Gtid::new(5, 9, 4)]).unwrap();
        let node = restart(&disk);
        assert_eq!(keys(&node), ["a"]);
        assert_eq!(node.slave_position().to_string(), "5-9-4");
    }
}

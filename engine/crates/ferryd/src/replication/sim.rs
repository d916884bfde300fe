//! The replica simulation: a replication connection's core — the IO side's [`Intake`] (relay log write), the
//! SQL side's [`SqlSide::step`] (batch planning, group commit of batches, gtid_slave_pos kept with the data) —
//! run on one thread over a simulated network, a simulated disk and a manual clock, with every choice drawn
//! from one seed (as raft-rs's and TigerBeetle's simulators do).
//!
//! A simulated master holds a binlog of transactions in several domains (seq_no holes, shared commit ids, DDL
//! and row-lock flags, before and after images), each committed at a time of the clock. Its dump follows the
//! master's rules — each domain starts just after the replica's GTID ([`StartPoint`]) — and sends the real wire
//! frames (`ReplTxn`, `Heartbeat`; `Ack` back) through a link that delays them at random, in order. The
//! schedule moves the clock, sends, delivers, applies, cuts and restores the link, stops and starts the
//! connection (its relay log discarded, resuming from gtid_slave_pos), takes checkpoints, and crashes the
//! replica: its disk keeps only what was made durable ([`SimFs`]), everything in memory is dropped, and the
//! node is reopened from that disk. After every step, and at the end once the replica has caught up:
//! 1. per domain, transactions are applied in the master's order, each once, none skipped (holes are the
//!    master's own);
//! 2. no transaction is applied before its delay has passed on the clock;
//! 3. the crash-safe position (gtid_slave_pos) equals what was applied while the node runs; after a crash it is
//!    never behind what the replica acknowledged as durable, never ahead of what it received, and the rows
//!    it recovered are exactly the master's at that position;
//! 4. at the end the replica's position is the master's, its rows are the master's, and its binlog holds every
//!    master transaction exactly once, in order per domain.
//!
//! `FERRY_REPLICA_SIM_SEED=n` runs one seed, printing its steps (every failure names its seed);
//! `FERRY_REPLICA_SIM_SEEDS=n` runs seeds `0..n` (the default run is [`SCHEDULES`]).

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;

use ferry_core::binlog::event::{decode_event, encode_event, flags, Event, GtidEvent};
use ferry_core::binlog::reader::{FileReader, Item, TransactionReader};
use ferry_core::binlog::seek::StartPoint;
use ferry_core::binlog::MAGIC;
use ferry_core::clock::{Clock, ManualClock};
use ferry_core::commit::{Durability, GroupReport};
use ferry_core::gtid::{DomainId, Gtid, GtidPosition};
use ferry_core::node::{CommitObserver, Node, NodeConfig};
use ferry_core::protocol::{Request, Response, LENGTH_BYTES};
use ferry_core::relay::{relay_file_bytes_for, RelayWriter};
use ferry_core::row::{Row, RowChange, Value};
use ferry_core::vfs::sim::SimFs;
use ferry_core::vfs::Fs;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::applier::{ParallelConfig, ParallelMode, ReadAhead, SqlSide, Step};
use super::filter::DomainFilter;
use super::io::{Failure, Intake};
use super::shared::Shared;
use super::status::ConnectionStatus;

/// Schedules of the default run.
const SCHEDULES: u64 = 500;
/// Random steps of one schedule before it lets the replica catch up.
const STEPS: usize = 400;
/// Rounds the catching up may take before the schedule counts as stuck.
const CATCH_UP_ROUNDS_MAX: usize = 20_000;
const DATA_DIR: &str = "/replica";
const RELAY_DIR: &str = "/replica/relay/sim";
/// The replica's server_id, and the master's (a second one also writes some of the master's domains).
const REPLICA_SERVER: u32 = 2;
const MASTER_SERVERS: [u32; 2] = [1, 3];
const MASTER_FILE: &str = "ferry-bin.000001";
/// Keys of each domain's table: a domain writes only its own table, as independent domains do.
const KEYS: u64 = 5;
/// The wall time the clock starts at.
const ORIGIN_US: u64 = 1_700_000_000_000_000;

fn seeds() -> Vec<u64> {
    let var = |name: &str| std::env::var(name).ok().map(|v| v.parse::<u64>().expect("a number"));
    if let Some(seed) = var("FERRY_REPLICA_SIM_SEED") {
        return vec![seed];
    }
    (0..var("FERRY_REPLICA_SIM_SEEDS").unwrap_or(SCHEDULES)).collect()
}

#[test]
fn seeded_schedules_apply_each_domain_in_order_exactly_once_with_crash_safe_positions() {
    let started = std::time::Instant::now();
    let mut tally: BTreeMap<&'static str, u64> = BTreeMap::new();
    let seeds = seeds();
    for &seed in &seeds {
        let notes = std::cell::RefCell::new(Vec::new());
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Schedule::new(seed, &notes).run()));
        match outcome {
            Ok(counts) => {
                for (what, n) in counts {
                    *tally.entry(what).or_default() += n;
                }
            }
            Err(panic) => {
                eprintln!(
                    "replica simulation failed at seed {seed} ({}): rerun it alone with FERRY_REPLICA_SIM_SEED={seed}",
                    notes.into_inner().join("; ")
                );
                std::panic::resume_unwind(panic);
            }
        }
    }
    eprintln!("replica simulation: {} schedules in {:?}: {tally:?}", seeds.len(), started.elapsed());
    if seeds.len() as u64 >= SCHEDULES {
        for what in ["crashes", "restarts", "disconnects", "delayed", "relay space waits"] {
            assert!(tally.get(what).copied().unwrap_or(0) > 0, "no schedule exercised {what}: {tally:?}");
        }
    }
}

/// One transaction of the simulated master's binlog.
struct MasterTxn {
    gtid: Gtid,
    commit_ts_us: u64,
    /// Its events as the dump sends them (checksums included).
    raw: Vec<u8>,
    /// Where it ends in the master's binlog.
    end_offset: u64,
    changes: Vec<RowChange>,
}

/// The simulated master: its binlog, generated up front, each transaction visible from its commit time on.
struct Master {
    /// In binlog order, which is commit-time order.
    txns: Vec<MasterTxn>,
    /// Per domain, the indexes into `txns` of its transactions, in order.
    by_domain: BTreeMap<DomainId, Vec<usize>>,
}

fn table(domain: DomainId) -> String {
    format!("t{domain}")
}

impl Master {
    fn generate(rng: &mut StdRng) -> Master {
        let domain_count = rng.random_range(1..=3u32);
        let mut domains: Vec<DomainId> = Vec::new();
        while domains.len() < domain_count as usize {
            let d = rng.random_range(0..6u32);
            if !domains.contains(&d) {
                domains.push(d);
            }
        }
        let count = rng.random_range(20..90usize);
        let mut rows: BTreeMap<(DomainId, String), Row> = BTreeMap::new();
        let mut last_seq: BTreeMap<DomainId, u64> = BTreeMap::new();
        let (mut at_us, mut commit_id, mut end_offset) = (ORIGIN_US, 1u64, 256u64);
        let mut txns = Vec::with_capacity(count);
        let mut by_domain: BTreeMap<DomainId, Vec<usize>> = BTreeMap::new();
        for i in 0..count {
            at_us += rng.random_range(0..40_000u64);
            if rng.random_bool(0.5) {
                commit_id += 1;
            }
            let domain = domains[rng.random_range(0..domains.len())];
            let hole = if rng.random_ratio(1, 8) { rng.random_range(1..4u64) } else { 0 };
            let seq = last_seq.get(&domain).copied().unwrap_or(0) + 1 + hole;
            last_seq.insert(domain, seq);
            let server = MASTER_SERVERS[usize::from(rng.random_ratio(1, 6))];
            let gtid = Gtid::new(domain, server, seq);
            let mut txn_flags = flags::BEFORE_IMAGES;
            if rng.random_ratio(1, 10) {
                txn_flags |= flags::WAITED;
            }
            if rng.random_ratio(1, 20) {
                txn_flags |= flags::DDL;
            }
            let mut changes = Vec::new();
            for n in 0..rng.random_range(1..=3u64) {
                let key = format!("k{}", rng.random_range(0..KEYS));
                let slot = (domain, key.clone());
                let before = rows.get(&slot).cloned();
                let after = if rng.random_ratio(1, 6) {
                    None
                } else {
                    Some(Row::from([("v".to_string(), Value::Int((seq * 10 + n) as i64))]))
                };
                match &after {
                    Some(row) => rows.insert(slot, row.clone()),
                    None => rows.remove(&slot),
                };
                changes.push(RowChange { table: table(domain), key, before, after });
            }
            let header = GtidEvent { gtid, commit_id, flags: txn_flags, commit_ts_us: at_us };
            let mut raw = Vec::new();
            encode_event(&Event::Gtid(header), &mut raw);
            encode_event(&Event::Rows { changes: changes.clone() }, &mut raw);
            encode_event(&Event::Commit { changes: changes.len() as u32 }, &mut raw);
            end_offset += raw.len() as u64;
            by_domain.entry(domain).or_default().push(i);
            txns.push(MasterTxn { gtid, commit_ts_us: at_us, raw, end_offset, changes });
        }
        Master { txns, by_domain }
    }

    /// Transactions committed by `now_us`: a prefix of the binlog.
    fn committed(&self, now_us: u64) -> usize {
        self.txns.partition_point(|t| t.commit_ts_us <= now_us)
    }

    /// The domain's transactions, in order.
    fn domain(&self, domain: DomainId) -> impl Iterator<Item = &MasterTxn> {
        self.by_domain.get(&domain).into_iter().flatten().map(|&i| &self.txns[i])
    }

    /// How many of the domain's transactions go up to and including `gtid`; panics when the master never had it.
    fn count_through(&self, gtid: Gtid) -> usize {
        let at = self.domain(gtid.domain).position(|t| t.gtid == gtid);
        1 + at.unwrap_or_else(|| panic!("{gtid} is no transaction of the master"))
    }

    /// The domain's rows after its first `count` transactions.
    fn rows_after(&self, domain: DomainId, count: usize) -> BTreeMap<String, Row> {
        let mut rows = BTreeMap::new();
        for txn in self.domain(domain).take(count) {
            for c in &txn.changes {
                match &c.after {
                    Some(row) => rows.insert(c.key.clone(), row.clone()),
                    None => rows.remove(&c.key),
                };
            }
        }
        rows
    }

    /// The master's position once everything is committed.
    fn final_position(&self) -> GtidPosition {
        let mut position = GtidPosition::new();
        for txn in &self.txns {
            position.set(txn.gtid);
        }
        position
    }
}

/// The replica's settings for one schedule.
#[derive(Debug)]
struct Settings {
    durability: Durability,
    parallel: ParallelConfig,
    delay_s: u64,
    read_ahead_bytes_max: u64,
    relay_space_bytes_max: u64,
    binlog_file_bytes_max: u64,
    /// Whether the master asks for confirmations (semi-sync).
    acks: bool,
}

impl Settings {
    fn draw(rng: &mut StdRng) -> Settings {
        let mode = [ParallelMode::Serial, ParallelMode::Conservative, ParallelMode::Optimistic][rng.random_range(0..3)];
        let workers = rng.random_range(1..=8usize);
        Settings {
            durability: if rng.random_ratio(1, 3) { Durability::None } else { Durability::Local },
            parallel: ParallelConfig { mode, workers, domain_workers_max: rng.random_range(1..=workers) },
            delay_s: if rng.random_ratio(1, 5) { rng.random_range(1..=3) } else { 0 },
            read_ahead_bytes_max: if rng.random_bool(0.5) { rng.random_range(1..2_000) } else { 1 << 20 },
            relay_space_bytes_max: if rng.random_bool(0.5) { rng.random_range(600..4_000) } else { 1 << 20 },
            binlog_file_bytes_max: rng.random_range(600..8_000),
            acks: rng.random_bool(0.5),
        }
    }
}

/// The replicated GTIDs the replica's node commits, in commit order (its commit observer).
#[derive(Default)]
struct AppliedLog(Mutex<Vec<Gtid>>);

impl CommitObserver for AppliedLog {
    fn group_committed(&self, report: &GroupReport) {
        let mut log = self.0.lock();
        log.extend(report.txns.iter().filter(|t| t.flags & flags::REPLICATED != 0).map(|t| t.committed.gtid));
    }
}

/// A running replication connection of the replica: its IO side's intake and its SQL side.
struct Connection {
    shared: Arc<Shared>,
    intake: Intake,
    sql: SqlSide,
    ahead: ReadAhead,
}

/// The master's side of one session of the link.
struct Dump {
    start: StartPoint,
    /// The next transaction of the master's binlog to look at.
    next: usize,
    /// End offset of the last transaction sent, and of the last one the replica confirmed.
    sent_end: u64,
    acked_end: u64,
}

/// The network between master and replica: frames in flight each way, delivered in order, each no sooner than
/// its time.
#[derive(Default)]
struct Link {
    dump: Option<Dump>,
    to_replica: VecDeque<(u64, Vec<u8>)>,
    to_master: VecDeque<(u64, Vec<u8>)>,
    /// When a cut link may be restored.
    reconnect_at_us: u64,
}

impl Link {
    /// A frame's delivery time: `delay` from now, never before the frame sent ahead of it.
    fn deliver_at(queue: &VecDeque<(u64, Vec<u8>)>, now_us: u64, delay_us: u64) -> u64 {
        queue.back().map_or(0, |(at, _)| *at).max(now_us + delay_us)
    }
}

/// Everything one seeded schedule does and knows.
struct Schedule<'a> {
    seed: u64,
    rng: StdRng,
    notes: &'a std::cell::RefCell<Vec<String>>,
    trace: bool,
    clock: ManualClock,
    settings: Settings,
    master: Master,
    disk: SimFs,
    node: Option<Arc<Node>>,
    applied_log: Arc<AppliedLog>,
    conn: Option<Connection>,
    link: Link,
    /// Per domain: how many of the master's transactions of the domain the replica holds (its next one to apply).
    next: BTreeMap<DomainId, usize>,
    /// Newest GTID per domain the replica acknowledged as durable: every commit with durability `local`; with
    /// `none`, what the last checkpoint (or open) covered.
    durable: GtidPosition,
    /// Newest GTID per domain the replica ever received.
    received: GtidPosition,
    /// A crash armed at a coming disk operation may cut a commit short: its transactions may survive or not.
    crash_armed: bool,
    counts: BTreeMap<&'static str, u64>,
}

impl<'a> Schedule<'a> {
    fn new(seed: u64, notes: &'a std::cell::RefCell<Vec<String>>) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let settings = Settings::draw(&mut rng);
        let master = Master::generate(&mut rng);
        notes.borrow_mut().push(format!(
            "{settings:?}; master: {} transactions in domains {:?}",
            master.txns.len(),
            master.by_domain.keys().collect::<Vec<_>>()
        ));
        Schedule {
            seed,
            rng,
            notes,
            trace: std::env::var("FERRY_REPLICA_SIM_SEED").is_ok(),
            clock: ManualClock::new(ORIGIN_US),
            settings,
            master,
            disk: SimFs::new(),
            node: None,
            applied_log: Arc::new(AppliedLog::default()),
            conn: None,
            link: Link::default(),
            next: BTreeMap::new(),
            durable: GtidPosition::new(),
            received: GtidPosition::new(),
            crash_armed: false,
            counts: BTreeMap::new(),
        }
    }

    fn note(&self, text: String) {
        if self.trace {
            eprintln!("[{} µs] {text}", self.clock.now_us() - ORIGIN_US);
        }
        self.notes.borrow_mut().push(text);
    }

    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_default() += 1;
    }

    fn node(&self) -> &Arc<Node> {
        self.node.as_ref().expect("the replica runs")
    }

    fn run(mut self) -> BTreeMap<&'static str, u64> {
        self.open_node();
        self.start_connection();
        for _ in 0..STEPS {
            let step = self.rng.random_range(0..100u32);
            if self.trace {
                eprintln!("step {step}");
            }
            match step {
                0..=27 => self.clock.advance(Duration::from_micros(self.rng.random_range(1..20_000))),
                28..=29 => self.clock.advance(Duration::from_micros(self.rng.random_range(500_000..4_000_000))),
                30..=47 => self.send(),
                48..=62 => self.deliver(),
                63..=82 => self.apply(),
                83..=86 => self.receive_acks(),
                87..=88 => self.cut_link(),
                89..=91 => self.checkpoint(),
                92 => self.restart_connection(),
                93 => {
                    self.disk.crash_now(self.rng.random());
                }
                94 if !self.crash_armed => {
                    self.crash_armed = true;
                    self.disk.crash_at(self.disk.ops() + self.rng.random_range(1..300), self.rng.random());
                }
                _ => {}
            }
            self.reconnect_when_due();
            if self.disk.crashed() {
                self.crash();
            }
            self.check_running();
        }
        self.catch_up();
        self.check_end();
        self.counts
    }

    /// Opens the replica's node on the disk and checks what it recovered; the next transaction of each domain
    /// is then the one after its gtid_slave_pos.
    fn open_node(&mut self) {
        let mut config = NodeConfig::new(REPLICA_SERVER, DATA_DIR);
        config.fs = Arc::new(self.disk.clone());
        config.clock = self.clock.handle();
        config.commit.durability = self.settings.durability;
        config.binlog_file_bytes_max = self.settings.binlog_file_bytes_max;
        config.checkpoint_interval = Duration::from_secs(3600);
        let seed = self.seed;
        self.applied_log.0.lock().clear();
        let observer: Arc<dyn CommitObserver> = self.applied_log.clone();
        let node = Node::open(config, Some(observer))
            .unwrap_or_else(|e| panic!("seed {seed}: the replica refused to open what a crash left: {e}"));
        let recovered = node.slave_position();
        for gtid in self.durable.iter() {
            let have = recovered.get(gtid.domain);
            assert!(
                have.is_some_and(|h| h.seq >= gtid.seq),
                "seed {seed}: gtid_slave_pos {recovered} is behind {gtid}, acknowledged as durable"
            );
        }
        for gtid in recovered.iter() {
            let received = self.received.get(gtid.domain);
            assert!(
                received.is_some_and(|r| r.seq >= gtid.seq),
                "seed {seed}: gtid_slave_pos {recovered} is ahead of what the replica ever received ({})",
                self.received
            );
        }
        self.next = self.master.by_domain.keys().map(|&d| (d, 0)).collect();
        for gtid in recovered.iter() {
            self.next.insert(gtid.domain, self.master.count_through(gtid));
        }
        self.node = Some(node);
        self.check_rows("recovered");
        self.durable = recovered;
        self.crash_armed = false;
    }

    /// START: a new relay log (the old one discarded) and both sides from gtid_slave_pos.
    fn start_connection(&mut self) {
        let fs: Arc<dyn Fs> = Arc::new(self.disk.clone());
        let relay_file_bytes = relay_file_bytes_for(self.settings.relay_space_bytes_max);
        let relay = match RelayWriter::create_on(fs, Path::new(RELAY_DIR), relay_file_bytes) {
            Ok(relay) => relay,
            Err(e) => {
                assert!(self.disk.crashed(), "seed {}: creating the relay log: {e}", self.seed);
                return;
            }
        };
        let reader = relay.reader().expect("the relay log was just created");
        let mut shared = Shared::new("sim", ConnectionStatus::default(), Weak::new());
        shared.relay_space = relay.space();
        let shared = Arc::new(shared);
        let node = self.node().clone();
        let clock = self.clock.handle();
        let intake = Intake {
            shared: shared.clone(),
            relay,
            relay_space_bytes_max: self.settings.relay_space_bytes_max,
            position: node.slave_position(),
            node: node.clone(),
            clock: clock.clone(),
        };
        let sql = SqlSide {
            shared: shared.clone(),
            node,
            relay: reader,
            ignore_duplicates: false,
            delay_s: self.settings.delay_s,
            until: None,
            parallel: self.settings.parallel,
            read_ahead_bytes_max: self.settings.read_ahead_bytes_max,
            filter: DomainFilter::default(),
            skip_remaining: 0,
            clock,
        };
        let ahead = ReadAhead::default();
        assert!(sql.begin(&ahead), "no UNTIL: the SQL side begins");
        self.conn = Some(Connection { shared, intake, sql, ahead });
        self.link = Link::default();
        self.note(format!("started from {}", self.node().slave_position()));
    }

    /// STOP then START, without a crash.
    fn restart_connection(&mut self) {
        let Some(mut conn) = self.conn.take() else { return };
        conn.shared.request_stop();
        assert_eq!(conn.sql.step(&mut conn.ahead), Step::Ended);
        drop(conn);
        self.count("restarts");
        self.check_position();
        self.start_connection();
    }

    /// The power goes: everything in memory is lost, the node restarts from what its disk kept.
    fn crash(&mut self) {
        self.note(format!("crash at {} (operation {})", self.disk.crash_note().expect("crashed"), self.disk.ops()));
        self.count("crashes");
        if !self.crash_armed {
            // Between two steps no commit was under way: nothing past what was applied can have been kept.
            self.received = self.applied_position();
        }
        self.conn = None;
        self.link = Link::default();
        self.node = None;
        self.disk = self.disk.after_crash().expect("crashed");
        self.open_node();
        self.start_connection();
    }

    /// What the replica applied, by the schedule's count.
    fn applied_position(&self) -> GtidPosition {
        let mut position = GtidPosition::new();
        for (&domain, &next) in &self.next {
            if let Some(txn) = next.checked_sub(1).and_then(|i| self.master.domain(domain).nth(i)) {
                position.set(txn.gtid);
            }
        }
        position
    }

    /// Connects when the link is down and may be restored: a new dump from the IO side's position.
    fn reconnect_when_due(&mut self) {
        let now = self.clock.now_us();
        let Some(conn) = &self.conn else { return };
        if self.link.dump.is_some() || now < self.link.reconnect_at_us || conn.shared.stopping() {
            return;
        }
        let skip_through = conn.intake.position.iter().map(|g| (g.domain, g)).collect();
        self.link.dump = Some(Dump {
            start: StartPoint { file_index: 0, offset: MAGIC.len() as u64, skip_through },
            next: 0,
            sent_end: 0,
            acked_end: 0,
        });
        conn.shared.status.lock().io_state = super::status::IoState::Connected;
    }

    fn cut_link(&mut self) {
        if self.link.dump.is_none() {
            return;
        }
        self.count("disconnects");
        self.link =
            Link { reconnect_at_us: self.clock.now_us() + self.rng.random_range(0..500_000), ..Link::default() };
        if let Some(conn) = &self.conn {
            let mut status = conn.shared.status.lock();
            status.io_state = super::status::IoState::Reconnecting;
            status.reconnects += 1;
        }
    }

    /// The master's dump sends what is committed and not yet sent, or a heartbeat when there is nothing.
    fn send(&mut self) {
        let now = self.clock.now_us();
        let committed = self.master.committed(now);
        let frames = self.rng.random_range(1..=6usize);
        let Some(dump) = &mut self.link.dump else { return };
        let mut sent = 0;
        while sent < frames && dump.next < committed {
            let txn = &self.master.txns[dump.next];
            dump.next += 1;
            if !dump.start.admit(txn.gtid) {
                continue;
            }
            let frame = Response::ReplTxn {
                file: MASTER_FILE.into(),
                end_offset: txn.end_offset,
                events: txn.raw.clone(),
                ack: self.settings.acks,
            };
            dump.sent_end = txn.end_offset;
            let at = Link::deliver_at(&self.link.to_replica, now, self.rng.random_range(0..30_000));
            self.link.to_replica.push_back((at, frame.encode(1)));
            sent += 1;
        }
        if sent == 0 {
            let position = self.master.txns[..committed].iter().fold(GtidPosition::new(), |mut p, t| {
                p.set(t.gtid);
                p
            });
            let beat = Response::Heartbeat { binlog_pos: position.to_string(), file: MASTER_FILE.into(), offset: 0 };
            let at = Link::deliver_at(&self.link.to_replica, now, self.rng.random_range(0..30_000));
            self.link.to_replica.push_back((at, beat.encode(1)));
        }
    }

    /// The replica's IO side takes the frames that have arrived, as long as its relay log has room.
    fn deliver(&mut self) {
        let now = self.clock.now_us();
        let Some(conn) = &mut self.conn else { return };
        if conn.shared.stopping() {
            return;
        }
        while let Some((at, bytes)) = self.link.to_replica.front() {
            if *at > now {
                break;
            }
            let (_, frame) = Response::decode(&bytes[LENGTH_BYTES..]).expect("the master's frames decode");
            let gtid = match &frame {
                Response::ReplTxn { events, .. } => match decode_event(events) {
                    Ok((Event::Gtid(header), _)) => Some(header.gtid),
                    other => panic!("seed {}: a transaction frame starts with {other:?}", self.seed),
                },
                _ => None,
            };
            let outcome = conn.intake.has_room(&frame).and_then(|room| match room {
                true => conn.intake.take(frame).map(Some),
                false => Ok(None),
            });
            match outcome {
                Ok(None) => {
                    *self.counts.entry("relay space waits").or_default() += 1;
                    break;
                }
                Ok(Some(ack)) => {
                    self.link.to_replica.pop_front();
                    if let Some(gtid) = gtid {
                        self.received.advance(gtid);
                    }
                    if let Some(ack) = ack {
                        let at = Link::deliver_at(&self.link.to_master, now, self.rng.random_range(0..30_000));
                        self.link.to_master.push_back((at, ack.encode(0)));
                    }
                }
                Err(Failure::Retry(why)) => panic!("seed {}: the IO side gave up on the link: {why}", self.seed),
                Err(Failure::Fatal { code, message }) => {
                    assert!(self.disk.crashed(), "seed {}: the IO side stopped: {code}: {message}", self.seed);
                    return;
                }
            }
        }
    }

    /// The master takes the replica's confirmations: each for a transaction it sent, none going back.
    fn receive_acks(&mut self) {
        let now = self.clock.now_us();
        let Some(dump) = &mut self.link.dump else { return };
        while self.link.to_master.front().is_some_and(|(at, _)| *at <= now) {
            let (_, bytes) = self.link.to_master.pop_front().expect("looked at");
            let (_, request) = Request::decode(&bytes[LENGTH_BYTES..]).expect("the replica's frames decode");
            let Request::Ack { file, offset } = request else { panic!("seed {}: {request:?} is no Ack", self.seed) };
            assert_eq!(file, MASTER_FILE);
            assert!(
                offset <= dump.sent_end && offset >= dump.acked_end,
                "seed {}: confirmation of {offset} after {} with {} sent",
                self.seed,
                dump.acked_end,
                dump.sent_end
            );
            dump.acked_end = offset;
        }
    }

    /// Steps the SQL side a few times, checking every transaction it commits.
    fn apply(&mut self) {
        let rounds = self.rng.random_range(1..=3);
        for _ in 0..rounds {
            let Some(conn) = &mut self.conn else { return };
            if conn.shared.stopping() {
                return;
            }
            let step = conn.sql.step(&mut conn.ahead);
            match step {
                Step::Ended => {
                    let error = conn.shared.status.lock().last_error.clone();
                    assert!(self.disk.crashed(), "seed {}: the SQL side stopped: {error:?}", self.seed);
                    return;
                }
                Step::Delayed { due_at_us } => {
                    assert!(due_at_us > self.clock.now_us());
                    *self.counts.entry("delayed").or_default() += 1;
                }
                _ => {}
            }
            self.check_applied();
        }
    }

    /// Each committed transaction is the next of its domain, and was due.
    fn check_applied(&mut self) {
        let applied: Vec<Gtid> = std::mem::take(&mut *self.applied_log.0.lock());
        if applied.is_empty() {
            return;
        }
        let now = self.clock.now_us();
        for gtid in applied {
            let next = self.next.get(&gtid.domain).copied().unwrap_or(0);
            let expected = self.master.domain(gtid.domain).nth(next);
            let Some(expected) = expected.filter(|t| t.gtid == gtid) else {
                panic!(
                    "seed {}: applied {gtid} where domain {} expects {:?} next",
                    self.seed,
                    gtid.domain,
                    expected.map(|t| t.gtid.to_string())
                );
            };
            assert!(
                now >= expected.commit_ts_us + self.settings.delay_s * 1_000_000,
                "seed {}: {gtid} applied {} µs after its commit, the delay is {} s",
                self.seed,
                now - expected.commit_ts_us,
                self.settings.delay_s
            );
            self.next.insert(gtid.domain, next + 1);
            if self.settings.durability == Durability::Local {
                self.durable.set(gtid);
            }
        }
        self.count("batches applied");
    }

    fn checkpoint(&mut self) {
        let Some(node) = &self.node else { return };
        if node.checkpoint().is_ok() {
            self.check_applied();
            self.durable = self.durable.join(&self.applied_position());
        }
    }

    /// While the node runs, gtid_slave_pos is what was applied (no more, no less).
    fn check_running(&mut self) {
        if self.node.is_some() && !self.disk.crashed() {
            self.check_applied();
            self.check_position();
        }
    }

    fn check_position(&self) {
        let (have, applied) = (self.node().slave_position(), self.applied_position());
        assert_eq!(have, applied, "seed {}: gtid_slave_pos is not what was applied", self.seed);
    }

    /// The replica's rows of each domain are the master's after the transactions it holds.
    fn check_rows(&self, when: &str) {
        let node = self.node();
        for (&domain, &count) in &self.next {
            let expected = self.master.rows_after(domain, count);
            for k in 0..KEYS {
                let key = format!("k{k}");
                let have = node.read_row(&table(domain), &key).expect("the store reads");
                assert_eq!(
                    have.as_ref(),
                    expected.get(&key),
                    "seed {}: {when}: row {}/{key} is not the master's after {count} transactions of domain {domain} \
                     (gtid_slave_pos {})",
                    self.seed,
                    table(domain),
                    node.slave_position()
                );
            }
        }
    }

    /// Heals everything (no more crashes or cuts, the delay passed) and lets the replica catch up.
    fn catch_up(&mut self) {
        if self.conn.as_ref().is_none_or(|c| c.shared.stopping()) {
            self.start_connection();
        }
        self.link.reconnect_at_us = 0;
        let target = self.master.final_position();
        for _ in 0..CATCH_UP_ROUNDS_MAX {
            if self.applied_position() == target {
                return;
            }
            self.clock.advance(Duration::from_millis(50));
            self.reconnect_when_due();
            self.send();
            self.deliver();
            self.receive_acks();
            self.apply();
            if self.disk.crashed() {
                // A crash armed during the random steps.
                self.crash();
            }
            self.check_running();
        }
        panic!(
            "seed {}: the replica never caught up: at {}, the master at {target}",
            self.seed,
            self.applied_position()
        );
    }

    /// At the end: the master's position and rows, and a binlog holding each master transaction once, in order.
    fn check_end(&mut self) {
        self.check_position();
        self.check_rows("caught up");
        let node = self.node().clone();
        let mut logged: BTreeMap<DomainId, Vec<Gtid>> = BTreeMap::new();
        for file in node.status().binlog_files {
            let path = node.binlog_dir().join(&file.name);
            let reader = FileReader::open_on(&self.disk, &path).expect("the replica's binlog opens");
            for item in TransactionReader::new(reader) {
                if let Item::Transaction(txn) = item.expect("the replica's binlog reads") {
                    logged.entry(txn.gtid().domain).or_default().push(txn.gtid());
                }
            }
        }
        for &domain in self.master.by_domain.keys() {
            let expected: Vec<Gtid> = self.master.domain(domain).map(|t| t.gtid).collect();
            assert_eq!(
                logged.get(&domain).cloned().unwrap_or_default(),
                expected,
                "seed {}: the replica's binlog of domain {domain} is not the master's, once each in order",
                self.seed
            );
        }
    }
}

//! Group commit, as a specification: one binlog write and one fsync per group, GTIDs in binlog order, the store
//! applied in the same order, and the comparison modes doing what they claim.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ferry_core::binlog::event::GtidEvent;
use ferry_core::binlog::reader::{FileReader, Item, Transaction, TransactionReader};
use ferry_core::binlog::{files_at, BinlogCoord};
use ferry_core::commit::{CommitMode, Durability};
use ferry_core::node::{Node, NodeConfig, TxnRequest};
use ferry_core::row::{RowChange, RowOp, Value};
use ferry_core::semisync::SemiSyncConfig;
use ferry_core::Gtid;

fn open(dir: &std::path::Path, mode: CommitMode, durability: Durability) -> Arc<Node> {
    let mut config = NodeConfig::new(1, dir);
    config.commit.mode = mode;
    config.commit.durability = durability;
    Node::open(config, None).unwrap()
}

fn increment(domain: u32, key: &str) -> TxnRequest {
    TxnRequest {
        domain: Some(domain),
        ops: vec![RowOp::Increment { table: "t".into(), key: key.into(), field: "n".into(), by: 1 }],
        ..Default::default()
    }
}

/// `threads` threads each commit `per_thread` increments (domain = thread % 3, key = thread % 5).
fn hammer(node: &Arc<Node>, threads: u32, per_thread: u32) {
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let node = node.clone();
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    node.execute(increment(i % 3, &format!("k{}", i % 5)), false).unwrap();
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
}

fn binlog(node: &Node) -> Vec<Transaction> {
    let mut out = Vec::new();
    for path in files_at(&node.binlog_dir()).unwrap() {
        for item in TransactionReader::new(FileReader::open(&path).unwrap()) {
            if let Item::Transaction(t) = item.unwrap() {
                out.push(t);
            }
        }
    }
    out
}

fn total(node: &Node) -> i64 {
    (0..5)
        .map(|k| match node.read_row("t", &format!("k{k}")).unwrap() {
            Some(row) => match row["n"] {
                Value::Int(n) => n,
                _ => panic!("n is an integer"),
            },
            None => 0,
        })
        .sum()
}

fn check_binlog_order(txns: &[Transaction]) {
    let mut last: BTreeMap<u32, u64> = BTreeMap::new();
    let mut last_commit_id = 0;
    for t in txns {
        let g = t.gtid();
        if let Some(prev) = last.insert(g.domain, g.seq) {
            assert_eq!(g.seq, prev + 1, "seq_nos follow binlog order without holes here");
        }
        assert!(t.header.commit_id >= last_commit_id, "commit ids never go back");
        last_commit_id = t.header.commit_id;
    }
}

#[test]
fn concurrent_commits_share_groups_one_fsync_each_and_keep_binlog_order() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path(), CommitMode::Group, Durability::Local);
    hammer(&node, 16, 200);
    let c = node.counters();
    assert_eq!(c.commits, 3200);
    assert_eq!(c.fsyncs, c.groups, "exactly one fsync per group");
    assert!(c.groups < c.commits, "some transactions shared a group ({} groups)", c.groups);
    let txns = binlog(&node);
    assert_eq!(txns.len(), 3200);
    check_binlog_order(&txns);
    // A group is contiguous in the binlog: a commit id never reappears after another one.
    let mut ids: Vec<u64> = txns.iter().map(|t| t.header.commit_id).collect();
    ids.dedup();
    assert_eq!(ids.len() as u64, c.groups);
    assert_eq!(total(&node), 3200);
}

#[test]
fn per_txn_fsync_gives_every_transaction_its_own_group_and_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path(), CommitMode::PerTxnFsync, Durability::Local);
    hammer(&node, 8, 50);
    let c = node.counters();
    assert_eq!((c.commits, c.groups, c.fsyncs), (400, 400, 400));
    check_binlog_order(&binlog(&node));
    assert_eq!(total(&node), 400);
}

#[test]
fn naive_scheduling_groups_fsyncs_and_applies_in_binlog_order() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path(), CommitMode::NaiveScheduling, Durability::Local);
    hammer(&node, 16, 100);
    let c = node.counters();
    assert_eq!(c.commits, 1600);
    assert_eq!(c.fsyncs, c.groups);
    check_binlog_order(&binlog(&node));
    assert_eq!(total(&node), 1600);
}

#[test]
fn durability_none_never_fsyncs_per_group() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path(), CommitMode::Group, Durability::None);
    hammer(&node, 4, 50);
    let c = node.counters();
    assert_eq!((c.commits, c.fsyncs), (200, 0));
    assert_eq!(total(&node), 200);
}

#[test]
fn the_leader_waits_for_commit_wait_count_members_within_commit_wait_us() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = NodeConfig::new(1, dir.path());
    config.commit.wait_count = 4;
    config.commit.wait_us = 5_000_000;
    let node = Node::open(config, None).unwrap();
    let started = std::time::Instant::now();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let node = node.clone();
            std::thread::spawn(move || node.execute(increment(0, &format!("k{i}")), false).unwrap())
        })
        .collect();
    let commits: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(started.elapsed() < Duration::from_secs(5), "the wait ended when the fourth member arrived");
    assert_eq!(node.counters().groups, 1);
    assert!(commits.iter().all(|c| c.commit_id == commits[0].commit_id));

    // Alone, a transaction waits at most commit_wait_us.
    let dir = tempfile::tempdir().unwrap();
    let mut config = NodeConfig::new(1, dir.path());
    config.commit.wait_count = 4;
    config.commit.wait_us = 20_000;
    let node = Node::open(config, None).unwrap();
    let started = std::time::Instant::now();
    node.execute(increment(0, "k"), false).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(20));
}

#[test]
fn a_reopened_node_replays_what_the_store_had_not_checkpointed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let node = open(dir.path(), CommitMode::Group, Durability::Local);
        hammer(&node, 4, 25);
        // Dropped without stop(): nothing checkpointed since open, as after a crash.
    }
    let node = open(dir.path(), CommitMode::Group, Durability::Local);
    assert_eq!(node.recovery().replayed_txns, 100);
    assert_eq!(total(&node), 100);
    assert_eq!(node.position().to_string(), "0-1-50,1-1-25,2-1-25");
    node.stop();
    drop(node);
    let node = open(dir.path(), CommitMode::Group, Durability::Local);
    assert_eq!(node.recovery().replayed_txns, 0, "a clean stop leaves nothing to replay");
    assert_eq!(node.execute(increment(0, "k0"), false).unwrap().gtid.to_string(), "0-1-51");
}

/// A replicated transaction (as replication's applier commits it), one row in domain 5 from server 2.
fn replicated(seq: u64, key: &str) -> (GtidEvent, Vec<RowChange>) {
    let header = GtidEvent { gtid: Gtid::new(5, 2, seq), commit_id: seq, flags: 0, commit_ts_us: 1 };
    let row = BTreeMap::from([("n".to_string(), Value::Int(1))]);
    (header, vec![RowChange { table: "t".into(), key: key.into(), before: None, after: Some(row) }])
}

#[test]
fn semi_sync_holds_back_client_commits_but_never_replicated_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = NodeConfig::new(1, dir.path());
    config.commit.durability = Durability::LocalAndNetwork;
    config.semi_sync = SemiSyncConfig { timeout: Duration::from_secs(30), ..config.semi_sync };
    // Groups of two, so a client's commit and a replicated one share a group, whoever leads it.
    config.commit.wait_count = 2;
    config.commit.wait_us = 30_000_000;
    let node = Node::open(config, None).unwrap();
    let semi = node.semi_sync().unwrap().clone();
    semi.connect(9, BinlogCoord { file_seq: 0, offset: 0 });

    let client = {
        let node = node.clone();
        std::thread::spawn(move || node.execute(increment(0, "c"), false))
    };
    let applied = node.commit_replicated_batch(vec![replicated(1, "r1")]);
    let applied = applied[0].as_ref().expect("the replicated transaction commits");
    assert_eq!(node.position().get(5), Some(Gtid::new(5, 2, 1)));
    std::thread::sleep(Duration::from_millis(50));
    assert!(!client.is_finished(), "the client's commit waits for the replica's confirmation");
    semi.ack(9, node.binlog_end());
    let committed = client.join().unwrap().unwrap();
    assert_eq!(committed.commit_id, applied.commit_id, "both shared one group");

    // Replication alone (no confirmation will come): no wait at all.
    let started = std::time::Instant::now();
    let applied = node.commit_replicated_batch(vec![replicated(2, "r2"), replicated(3, "r3")]);
    assert!(applied.iter().all(Result::is_ok), "{applied:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    let status = semi.status();
    assert_eq!((status.waits, status.timeouts, status.state), (1, 0, "on"), "only the client's group waited");
}

/// Semi-sync `after_sync` under concurrent clients: leaders wait for the replica after letting go of the binlog
/// lock, yet every commit is answered, groups become visible in binlog order, and a client's answer comes only
/// once its row is visible and the replica has confirmed it.
#[test]
fn after_sync_groups_become_visible_in_binlog_order_once_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = NodeConfig::new(1, dir.path());
    config.commit.durability = Durability::LocalAndNetwork;
    config.semi_sync = SemiSyncConfig {
        timeout: Duration::from_secs(30),
        wait_point: ferry_core::semisync::WaitPoint::AfterSync,
        ..config.semi_sync
    };
    let node = Node::open(config, None).unwrap();
    let semi = node.semi_sync().unwrap().clone();
    semi.connect(9, BinlogCoord { file_seq: 0, offset: 0 });
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The replica: confirms whatever the binlog holds each time it grows (woken by the growth, not by a clock).
    let acker = {
        let (node, semi, done) = (node.clone(), semi.clone(), done.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let mut seen = BinlogCoord { file_seq: 0, offset: 0 };
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                seen = rt.block_on(node.wait_for_binlog_growth(seen, Duration::from_millis(100)));
                semi.ack(9, seen);
            }
        })
    };
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let node = node.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let committed = node.execute(increment(0, "shared"), false).unwrap();
                    let own = format!("c{c}_{i}");
                    node.execute(increment(0, &own), false).unwrap();
                    assert!(node.read_row("t", &own).unwrap().is_some(), "answered, hence visible");
                    assert!(node.position().get(0).unwrap().seq >= committed.gtid.seq);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    acker.join().unwrap();
    assert_eq!(node.read_row("t", "shared").unwrap().unwrap()["n"], Value::Int(200));
    assert_eq!(node.position().to_string(), "0-1-400");
    let seqs: Vec<u64> = binlog(&node).iter().map(|t| t.gtid().seq).collect();
    assert_eq!(seqs, (1..=400).collect::<Vec<_>>(), "binlog order is GTID order");
    let status = semi.status();
    assert_eq!((status.timeouts, status.state), (0, "on"), "every group was confirmed in time");
    assert!(status.waits > 0);
}

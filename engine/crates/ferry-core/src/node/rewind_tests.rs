//! Tests of the rewind: what it cuts and keeps, each refusal, a restart after it, and a power loss at every I/O
//! operation of it on the simulated disk (the node comes back either as it was or rewound, never a mix).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::binlog::reader::{FileReader, Item, TransactionReader};
use crate::binlog::MAGIC;
use crate::commit::Durability;
use crate::node::{NodeConfig, TxnRequest};
use crate::row::{RowOp, Value};
use crate::store::TableChecksum;
use crate::vfs::sim::SimFs;
use crate::vfs::Fs;

fn pos(text: &str) -> GtidPosition {
    text.parse().unwrap()
}

fn put(domain: u32, key: &str, n: i64) -> TxnRequest {
    TxnRequest {
        domain: Some(domain),
        ops: vec![RowOp::Put {
            table: format!("t{domain}"),
            key: key.into(),
            row: [("n".into(), Value::Int(n))].into(),
        }],
        ..Default::default()
    }
}

fn delete(domain: u32, key: &str) -> TxnRequest {
    TxnRequest {
        domain: Some(domain),
        ops: vec![RowOp::Delete { table: format!("t{domain}"), key: key.into() }],
        ..Default::default()
    }
}

fn increment(domain: u32, key: &str) -> TxnRequest {
    TxnRequest {
        domain: Some(domain),
        ops: vec![RowOp::Increment { table: format!("t{domain}"), key: key.into(), field: "n".into(), by: 5 }],
        ..Default::default()
    }
}

/// What the tests compare: the binlog position, the table checksums, gtid_slave_pos.
type State = (String, BTreeMap<String, TableChecksum>, String);

fn state(node: &Node) -> State {
    let (position, sums) = node.checksums().unwrap();
    (position.to_string(), sums, node.slave_position().to_string())
}

/// Writes in two domains, the "common" part then the part only this node has (updates, deletes, new rows, a
/// new table, a rotation in between); returns the state at the common position and the GTIDs written after it.
fn diverge(node: &Node) -> (State, Vec<Gtid>) {
    for i in 0..4 {
        node.execute(put(0, &format!("k{i}"), i), false).unwrap();
        node.execute(put(1, &format!("k{i}"), i), false).unwrap();
    }
    let common = state(node);
    let mut extra = Vec::new();
    for req in [increment(0, "k1"), delete(1, "k2"), put(0, "new", 9)] {
        extra.push(node.execute(req, false).unwrap().gtid);
    }
    node.flush_logs().unwrap();
    for req in [put(1, "k0", 70), increment(0, "k1"), put(5, "other", 1), delete(0, "k0")] {
        extra.push(node.execute(req, false).unwrap().gtid);
    }
    (common, extra)
}

fn archive_gtids(node: &Node, name: &str) -> Vec<Gtid> {
    let path = node.config().data_dir.join(rewind::ARCHIVE_DIR).join(name);
    let (list, txns) = rewind::read_archive(&*node.config().fs, &path).unwrap();
    assert_eq!(BinlogState::from_gtids(list).position().to_string(), "0-1-4,1-1-4", "the GTID list is the cut's state");
    txns.iter().map(|t| t.gtid()).collect()
}

use crate::gtid::BinlogState;

#[test]
fn a_rewind_cuts_what_only_this_node_has_archives_it_and_puts_the_store_back() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
    let (common, extra) = diverge(&node);
    node.set_read_only_durably(true).unwrap();
    let before = state(&node);

    let dry = node.rewind(&pos("0-1-4,1-1-4"), true, &|| None).unwrap();
    let listed: Vec<String> = dry.cut.iter().map(|t| t.gtid.clone()).collect();
    assert_eq!(listed, extra.iter().map(Gtid::to_string).collect::<Vec<_>>());
    assert_eq!(dry.archive, None);
    assert_eq!(dry.gtid_binlog_state, "0-1-4,1-1-4");
    assert_eq!(state(&node), before, "a dry run changes nothing");
    assert!(node.rewind_archives().is_empty());

    let done = node.rewind(&pos("0-1-4,1-1-4"), false, &|| None).unwrap();
    assert_eq!(done.cut, dry.cut);
    let archive = done.archive.clone().unwrap();
    assert_eq!(state(&node), common, "binlog position and store are back at the position");
    assert_eq!(node.status().binlog_files.len(), 1, "the file the rotation started is gone");
    assert_eq!(node.status().binlog_coord, done.cut_at.unwrap());
    assert_eq!(archive_gtids(&node, &archive), extra);
    assert_eq!(node.rewind_archives(), std::slice::from_ref(&archive));
    assert!(node.recent_events(None, 100, None).iter().all(|e| !listed.contains(&e.gtid)));
    // The new master's next GTID in a domain is accepted by strict mode; this node's own cut seq_nos are not
    // handed out again.
    node.check_replicated_gtid(Gtid::new(0, 2, 5)).unwrap();
    node.set_read_only_durably(false).unwrap();
    let next = node.execute(put(0, "after", 1), false).unwrap().gtid;
    assert!(next.seq > extra.iter().filter(|g| g.domain == 0).map(|g| g.seq).max().unwrap(), "{next}");
    let rewound = state(&node);
    node.stop();
    drop(node);

    let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
    assert_eq!(state(&node), rewound, "a restart keeps the rewind (nothing cut is replayed)");
    assert_eq!(node.rewind_archives(), [archive]);
    // Running it again at the same position cuts nothing.
    node.set_read_only_durably(true).unwrap();
    let again = node.rewind(&node.position(), false, &|| None).unwrap();
    assert!(again.cut.is_empty() && again.archive.is_none());
}

#[test]
fn a_domain_left_out_of_the_position_is_cut_whole() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
    node.execute(put(0, "a", 1), false).unwrap();
    node.execute(put(3, "b", 1), false).unwrap();
    node.set_read_only_durably(true).unwrap();
    let done = node.rewind(&pos("0-1-1"), false, &|| None).unwrap();
    assert_eq!(done.cut.iter().map(|t| t.gtid.as_str()).collect::<Vec<_>>(), ["3-1-1"]);
    assert_eq!(node.status().gtid_binlog_pos, "0-1-1");
    assert!(node.checksums().unwrap().1.get("t3").is_none_or(|t| t.rows == 0));
}

fn refused(node: &Node, to: &str) -> String {
    let before = state(node);
    let files = node.status().binlog_files.len();
    let err = node.rewind(&pos(to), false, &|| None).unwrap_err();
    assert_eq!(state(node), before, "a refusal changes nothing");
    assert_eq!(node.status().binlog_files.len(), files);
    assert!(node.rewind_archives().is_empty(), "nothing archived");
    assert!(node.status().failed.is_none());
    err.to_string()
}

#[test]
fn each_refusal_names_its_reason_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
    diverge(&node);
    let text = refused(&node, "0-1-4,1-1-4");
    assert!(text.contains("read-only"), "{text}");
    node.set_read_only_durably(true).unwrap();

    let text = refused(&node, "0-1-40,1-1-4");
    assert!(text.contains("ahead") && text.contains("0-1-40") && text.contains("domain 0"), "{text}");
    let text = refused(&node, "0-1-4,1-1-4,8-1-1");
    assert!(text.contains("ahead") && text.contains("nothing in that domain"), "{text}");
    let text = refused(&node, "0-2-3,1-1-4");
    assert!(text.contains("0-2-3") && text.contains("diverged"), "{text}");
    // Domain 1's kept 1-1-5 comes after domain 0's cut 0-1-5 in the binlog.
    let text = refused(&node, "0-1-4,1-1-5,5-1-1");
    assert!(text.contains("1-1-5 is kept but follows 0-1-5"), "{text}");
}

fn without_before_images(dir: &std::path::Path) -> Arc<Node> {
    let mut config = NodeConfig::new(1, dir);
    config.log_before_images = false;
    Node::open(config, None).unwrap()
}

/// Without before images the store is put back by replaying the kept binlog into it emptied, where the binlog
/// holds its whole history.
#[test]
fn without_before_images_a_whole_binlog_is_replayed_into_the_emptied_store() {
    let dir = tempfile::tempdir().unwrap();
    let node = without_before_images(dir.path());
    let (common, extra) = diverge(&node);
    node.set_read_only_durably(true).unwrap();
    let dry = node.rewind(&pos("0-1-4,1-1-4"), true, &|| None).unwrap();
    assert!(dry.by_replay && dry.archive.is_none());
    let done = node.rewind(&pos("0-1-4,1-1-4"), false, &|| None).unwrap();
    assert!(done.by_replay);
    assert_eq!(state(&node), common);
    assert_eq!(archive_gtids(&node, done.archive.as_ref().unwrap()), extra);
    node.stop();
    drop(node);
    let node = without_before_images(dir.path());
    assert_eq!(state(&node), common, "a restart keeps it");
}

/// ...and where it does not (RESET MASTER kept the data, dropped the binlog), refused naming the transaction and
/// why replay cannot serve.
#[test]
fn without_before_images_a_binlog_missing_history_is_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let node = without_before_images(dir.path());
    node.execute(put(0, "a", 1), false).unwrap();
    node.set_read_only_durably(true).unwrap();
    node.reset_master(1, false).unwrap();
    node.set_read_only_durably(false).unwrap();
    node.execute(put(0, "a", 2), false).unwrap();
    node.execute(put(0, "a", 3), false).unwrap();
    node.set_read_only_durably(true).unwrap();
    let text = refused(&node, "0-1-2");
    assert!(text.contains("0-1-3") && text.contains("before images") && text.contains("RESET MASTER"), "{text}");
    let err = node.rewind(&pos("0-1-2"), true, &|| None).unwrap_err();
    assert!(matches!(err, RewindError::Refused(RewindRefusal::NoBeforeImages { .. })), "a dry run says so too");
    // A purge: the binlog does not start at its first transaction.
    let dir = tempfile::tempdir().unwrap();
    let node = without_before_images(dir.path());
    node.execute(put(0, "a", 1), false).unwrap();
    let second = node.flush_logs().unwrap();
    node.execute(put(0, "a", 2), false).unwrap();
    node.execute(put(0, "a", 3), false).unwrap();
    node.purge_logs_before(&second).unwrap();
    node.set_read_only_durably(true).unwrap();
    let text = refused(&node, "0-1-2");
    assert!(text.contains("0-1-3") && text.contains("purged"), "{text}");
}

#[test]
fn a_position_in_purged_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
    node.execute(put(0, "a", 1), false).unwrap();
    node.execute(put(0, "a", 2), false).unwrap();
    let second = node.flush_logs().unwrap();
    node.execute(put(0, "a", 3), false).unwrap();
    node.purge_logs_before(&second).unwrap();
    node.set_read_only_durably(true).unwrap();
    let text = refused(&node, "0-1-1");
    assert!(text.contains("purged") && text.contains("0-1-1") && text.contains(&second), "{text}");
    let text = refused(&node, "");
    assert!(text.contains("leaves out domain 0"), "{text}");
    // The position at the oldest file's start is fine.
    assert_eq!(node.rewind(&pos("0-1-2"), false, &|| None).unwrap().cut.len(), 1);
}

/// A replicated transaction that is cut takes gtid_slave_pos back to the position.
#[test]
fn a_cut_replicated_transaction_takes_gtid_slave_pos_back() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
    let header = |seq| crate::binlog::event::GtidEvent {
        gtid: Gtid::new(0, 7, seq),
        commit_id: seq,
        flags: crate::binlog::event::flags::BEFORE_IMAGES,
        commit_ts_us: 1,
    };
    let change = |before: Option<i64>, after: i64| crate::row::RowChange {
        table: "t0".into(),
        key: "r".into(),
        before: before.map(|n| [("n".to_string(), Value::Int(n))].into()),
        after: Some([("n".to_string(), Value::Int(after))].into()),
    };
    for r in
        node.commit_replicated_batch(vec![(header(1), vec![change(None, 1)]), (header(2), vec![change(Some(1), 2)])])
    {
        r.unwrap();
    }
    assert_eq!(node.slave_position().to_string(), "0-7-2");
    node.set_read_only_durably(true).unwrap();
    node.rewind(&pos("0-7-1"), false, &|| None).unwrap();
    assert_eq!(node.slave_position().to_string(), "0-7-1");
    assert_eq!(node.read_row("t0", "r").unwrap().unwrap()["n"], Value::Int(1));
    node.stop();
    drop(node);
    let node = Node::open(NodeConfig::new(1, dir.path()), None).unwrap();
    assert_eq!(node.slave_position().to_string(), "0-7-1");
    assert_eq!(node.status().gtid_binlog_pos, "0-7-1");
}

const SIM_DIR: &str = "/node";

fn sim_config(disk: &SimFs, durability: Durability) -> NodeConfig {
    let mut config = NodeConfig::new(1, SIM_DIR);
    config.fs = Arc::new(disk.clone());
    config.commit.durability = durability;
    // Durability `none` runs without before images: the store is put back by replay.
    config.log_before_images = durability != Durability::None;
    config.binlog_file_bytes_max = 1 << 20;
    config.checkpoint_interval = std::time::Duration::from_secs(3600);
    config
}

/// A node on a fresh simulated disk with the diverged history (made durable: with durability `none` a crash may
/// otherwise lose some of it, rewind or not), read-only; with the state the rewind must give.
fn sim_node(durability: Durability) -> (SimFs, Arc<Node>, State) {
    let disk = SimFs::new();
    let node = Node::open(sim_config(&disk, durability), None).unwrap();
    let (common, _) = diverge(&node);
    node.checkpoint().unwrap();
    node.set_read_only_durably(true).unwrap();
    (disk, node, common)
}

fn binlog_gtids(disk: &SimFs) -> Vec<Gtid> {
    let dir = std::path::Path::new(SIM_DIR).join("binlog");
    let mut out = Vec::new();
    for name in crate::binlog::read_index_on(disk, &dir).unwrap() {
        let reader = FileReader::open_at_on(disk, &dir.join(name), MAGIC.len() as u64).unwrap();
        for item in TransactionReader::new(reader) {
            if let Item::Transaction(t) = item.unwrap() {
                out.push(t.gtid());
            }
        }
    }
    out
}

/// The power goes at every I/O operation of a rewind (and with several seeds of what unsynced bytes survive):
/// the node restarted from what survived is either as it was (no intent was durable) or rewound — binlog,
/// store, gtid_slave_pos all at the position, the archive holding exactly the cut — never a mix; and once the
/// rewind returned, rewound.
#[test]
fn a_power_loss_at_any_point_of_a_rewind_leaves_the_old_state_or_the_rewound_one() {
    power_loss_during_a_rewind(Durability::Local);
}

/// The same with durability `none` (the binlog is fsynced by the rewind's checkpoint, not per group) and no before
/// images (the store is put back by replaying the kept binlog).
#[test]
fn a_power_loss_during_a_rewind_by_replay_without_fsyncs_per_group_leaves_the_old_state_or_the_rewound_one() {
    power_loss_during_a_rewind(Durability::None);
}

fn power_loss_during_a_rewind(durability: Durability) {
    let (probe, node, _) = sim_node(durability);
    let start = probe.ops();
    let done = node.rewind(&pos("0-1-4,1-1-4"), false, &|| None).unwrap();
    assert_eq!(done.by_replay, durability == Durability::None);
    let ops = probe.ops() - start;
    assert!(ops > 10, "{ops}");
    drop(node);
    let (mut old_seen, mut new_seen) = (0, 0);
    for crash_at in 1..=ops + 1 {
        for seed in 0..3 {
            let (disk, node, common) = sim_node(durability);
            let before = state(&node);
            let before_gtids = binlog_gtids(&disk);
            let kept = |g: &Gtid| g.domain <= 1 && g.seq <= 4;
            let cut: Vec<Gtid> = before_gtids.iter().copied().filter(|g| !kept(g)).collect();
            disk.crash_at(disk.ops() + crash_at, seed);
            let returned = node.rewind(&pos("0-1-4,1-1-4"), false, &|| None);
            let finished = returned.is_ok() && !disk.crashed();
            disk.crash_now(seed);
            drop(node);
            let after = disk.after_crash().unwrap();
            let node = Node::open(sim_config(&after, durability), None)
                .unwrap_or_else(|e| panic!("crash_at {crash_at} seed {seed}: restart: {e}"));
            let got = state(&node);
            let archives = node.rewind_archives();
            if got == before && !finished {
                old_seen += 1;
                assert_eq!(binlog_gtids(&after), before_gtids, "crash_at {crash_at} seed {seed}");
                assert!(
                    archives.is_empty(),
                    "crash_at {crash_at} seed {seed}: no archive of a rewind that did not happen"
                );
            } else {
                new_seen += 1;
                assert_eq!(got, common, "crash_at {crash_at} seed {seed}: rewound (finished: {finished})");
                assert!(binlog_gtids(&after).iter().all(kept), "crash_at {crash_at} seed {seed}");
                assert_eq!(archives.len(), 1, "crash_at {crash_at} seed {seed}");
                assert_eq!(archive_gtids(&node, &archives[0]), cut, "crash_at {crash_at} seed {seed}");
            }
            assert!(rewind::read_intent(&after, &std::path::Path::new(SIM_DIR).join("binlog")).unwrap().is_none());
            let archive_dir = std::path::Path::new(SIM_DIR).join(rewind::ARCHIVE_DIR);
            let partial: Vec<String> = after
                .list_dir(&archive_dir)
                .unwrap_or_default()
                .into_iter()
                .filter(|n| n.ends_with(".partial"))
                .collect();
            assert!(partial.is_empty(), "crash_at {crash_at} seed {seed}: {partial:?} left");
        }
    }
    assert!(old_seen > 0 && new_seen > 0, "both outcomes were reached ({old_seen} old, {new_seen} rewound)");
}

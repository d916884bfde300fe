//! Fail-stop on storage errors, one test per I/O site (failpoints: `cargo test -p ferry-core --features
//! failpoints`). At each site an injected EIO, ENOSPC or short write must:
//! - put the node in the "storage failed" state (status `failed`, read-only) and refuse every later commit, the
//!   ones already waiting in the group included, with the failure named;
//! - lose no acknowledged transaction: after a restart every acknowledged one is there;
//! - leave no unacknowledged one half-visible: after the restart the store holds exactly what the binlog holds;
//! - never hand a seq_no out twice: the restarted node allocates above every GTID ever acknowledged.
#![cfg(feature = "failpoints")]

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use fail::FailScenario;
use ferry_core::binlog::files_at;
use ferry_core::binlog::reader::{FileReader, Item, TransactionReader};
use ferry_core::commit::Durability;
use ferry_core::fault::sites;
use ferry_core::node::{Node, NodeConfig, TxnError, TxnRequest};
use ferry_core::relay::RelayWriter;
use ferry_core::row::{RowOp, Value};
use ferry_core::{Gtid, GtidPosition};

const ACTIONS: [&str; 3] = ["return(eio)", "return(enospc)", "return(short)"];

fn config(dir: &Path, durability: Durability) -> NodeConfig {
    let mut config = NodeConfig::new(1, dir);
    config.commit.durability = durability;
    config.checkpoint_interval = std::time::Duration::from_secs(3600);
    config
}

fn put(key: &str, n: i64) -> TxnRequest {
    TxnRequest {
        ops: vec![RowOp::Put { table: "t".into(), key: key.into(), row: [("n".to_string(), Value::Int(n))].into() }],
        ..Default::default()
    }
}

/// What clients were told: the acknowledged keys with their GTIDs.
#[derive(Default)]
struct Acked(Vec<(String, Gtid)>);

impl Acked {
    fn commit(&mut self, node: &Node, key: &str) -> Result<Gtid, TxnError> {
        let gtid = node.execute(put(key, 1), false)?.gtid;
        self.0.push((key.to_string(), gtid));
        Ok(gtid)
    }
}

fn assert_failed(node: &Node, site: &str) {
    let status = node.status();
    let failed = status.failed.unwrap_or_else(|| panic!("{site}: status has no failure"));
    assert!(failed.contains("injected at"), "{site}: {failed}");
    assert!(status.read_only && node.is_read_only(), "{site}: a failed node is read-only");
    // Fail-stop: nothing more is acknowledged, even once the fault is gone.
    fail::remove(site);
    let err = node.execute(put("after-failure", 1), false).unwrap_err();
    assert!(matches!(err, TxnError::NodeFailed(_)), "{site}: {err}");
    assert!(err.to_string().contains("storage failed"), "{site}: {err}");
    assert!(node.checkpoint().is_err(), "{site}: no checkpoint after a failure either");
}

/// The keys the binlog holds, read file by file.
fn binlog_keys(dir: &Path) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for path in files_at(&dir.join("binlog")).unwrap() {
        for item in TransactionReader::new(FileReader::open(&path).unwrap()) {
            if let Item::Transaction(t) = item.unwrap() {
                keys.extend(t.changes.iter().filter(|c| c.table == "t").map(|c| c.key.clone()));
            }
        }
    }
    keys
}

/// Restarts (as after a crash: no clean stop) and checks the three promises.
fn restart_and_verify(dir: &Path, durability: Durability, acked: &Acked, site: &str) -> Arc<Node> {
    let node = Node::open(config(dir, durability), None).unwrap_or_else(|e| panic!("{site}: restart: {e}"));
    assert_eq!(node.status().failed, None, "{site}: a restart starts healthy");
    for (key, gtid) in &acked.0 {
        assert!(node.read_row("t", key).unwrap().is_some(), "{site}: acknowledged {key} ({gtid}) was lost");
    }
    let stored: BTreeSet<String> = node.store().scan("t").unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(stored, binlog_keys(dir), "{site}: the store and the binlog disagree (a half-visible transaction)");
    let max_acked = acked.0.iter().map(|(_, g)| g.seq).max().unwrap_or(0);
    let next = node.execute(put("after-restart", 1), false).unwrap().gtid;
    assert!(next.seq > max_acked, "{site}: seq_no {} handed out again (acknowledged up to {max_acked})", next.seq);
    node
}

/// Several client threads commit until refused; the fault is configured while they run, so groups with
/// waiting members hit it. Returns what was acknowledged.
fn fail_under_load(node: &Arc<Node>, site: &str, action: &str) -> Acked {
    let acked = Arc::new(Mutex::new(Acked::default()));
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let (node, acked) = (node.clone(), acked.clone());
            std::thread::spawn(move || {
                let mut refusals = Vec::new();
                for i in 0.. {
                    let key = format!("w{t}-{i:05}");
                    match node.execute(put(&key, 1), false) {
                        Ok(c) => acked.lock().unwrap().0.push((key, c.gtid)),
                        Err(e) => {
                            refusals.push(e.to_string());
                            break;
                        }
                    }
                }
                refusals
            })
        })
        .collect();
    while node.counters().commits < 200 {
        std::thread::yield_now();
    }
    fail::cfg(site, action).unwrap();
    for t in threads {
        for refusal in t.join().unwrap() {
            assert!(refusal.contains("storage failed"), "{site}/{action}: {refusal}");
        }
    }
    Arc::try_unwrap(acked).ok().unwrap().into_inner().unwrap()
}

#[test]
fn a_failed_binlog_write_stops_acknowledging_and_loses_nothing_acknowledged() {
    for action in ACTIONS {
        let scenario = FailScenario::setup();
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(config(dir.path(), Durability::Local), None).unwrap();
        let acked = fail_under_load(&node, sites::BINLOG_WRITE, action);
        assert!(acked.0.len() >= 200);
        assert_failed(&node, sites::BINLOG_WRITE);
        drop(node);
        restart_and_verify(dir.path(), Durability::Local, &acked, action);
        scenario.teardown();
    }
}

#[test]
fn a_failed_binlog_fsync_stops_acknowledging_and_loses_nothing_acknowledged() {
    let scenario = FailScenario::setup();
    for action in ["return(eio)", "return(enospc)"] {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(config(dir.path(), Durability::Local), None).unwrap();
        let acked = fail_under_load(&node, sites::BINLOG_FSYNC, action);
        assert_failed(&node, sites::BINLOG_FSYNC);
        drop(node);
        restart_and_verify(dir.path(), Durability::Local, &acked, action);
    }
    scenario.teardown();
}

#[test]
fn a_failed_binlog_rotation_header_or_index_write_is_fail_stop() {
    let scenario = FailScenario::setup();
    for site in [sites::BINLOG_HEADER, sites::BINLOG_INDEX] {
        for action in ACTIONS {
            let dir = tempfile::tempdir().unwrap();
            let node = Node::open(config(dir.path(), Durability::Local), None).unwrap();
            let mut acked = Acked::default();
            for i in 0..20 {
                acked.commit(&node, &format!("k{i}")).unwrap();
            }
            fail::cfg(site, action).unwrap();
            let err = node.flush_logs().unwrap_err();
            assert!(err.to_string().contains("injected at"), "{site}/{action}: {err}");
            assert_failed(&node, site);
            drop(node);
            let node = restart_and_verify(dir.path(), Durability::Local, &acked, site);
            // The rotation cut short is completed at start-up.
            assert_eq!(node.status().binlog_files.len(), 2, "{site}/{action}");
        }
    }
    scenario.teardown();
}

#[test]
fn a_failed_store_flush_is_not_ignored_the_node_stops_and_replays_after_restart() {
    let scenario = FailScenario::setup();
    for action in ["return(eio)", "return(enospc)"] {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(config(dir.path(), Durability::Local), None).unwrap();
        let mut acked = Acked::default();
        for i in 0..50 {
            acked.commit(&node, &format!("k{i}")).unwrap();
        }
        fail::cfg(sites::STORE_FLUSH, action).unwrap();
        let err = node.checkpoint().unwrap_err();
        assert!(err.to_string().contains("store flush"), "{err}");
        // Rows of the failed flush stay readable until the restart.
        assert!(node.read_row("t", "k49").unwrap().is_some());
        assert_failed(&node, sites::STORE_FLUSH);
        // Checksums of a failed node are refused, never a silent success.
        assert!(node.checksums().is_err());
        drop(node);
        let node = restart_and_verify(dir.path(), Durability::Local, &acked, action);
        assert!(node.recovery().replayed_txns >= 50, "the restart replayed what the failed flush held");
    }
    scenario.teardown();
}

#[test]
fn a_failed_replica_state_write_is_fail_stop_and_the_old_position_survives() {
    let scenario = FailScenario::setup();
    let dir = tempfile::tempdir().unwrap();
    let node = Node::open(config(dir.path(), Durability::Local), None).unwrap();
    let before: GtidPosition = "0-2-5".parse().unwrap();
    node.set_slave_position(&before).unwrap();
    let mut acked = Acked::default();
    acked.commit(&node, "k").unwrap();
    fail::cfg(sites::REPLICA_STATE, "return(eio)").unwrap();
    let err = node.set_slave_position(&"0-2-9".parse().unwrap()).unwrap_err();
    assert!(err.to_string().contains("replica state"), "{err}");
    assert_failed(&node, sites::REPLICA_STATE);
    drop(node);
    let node = restart_and_verify(dir.path(), Durability::Local, &acked, sites::REPLICA_STATE);
    assert_eq!(node.slave_position(), before, "the failed write left the old position whole");
    scenario.teardown();
}

#[test]
fn a_failed_seq_no_high_water_mark_write_is_fail_stop() {
    let scenario = FailScenario::setup();
    for durability in [Durability::None, Durability::Network] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path(), durability);
        cfg.semi_sync.timeout = std::time::Duration::from_millis(1);
        let node = Node::open(cfg, None).unwrap();
        fail::cfg(sites::SEQ_NO_HWM, "return(enospc)").unwrap();
        // The first commit of a domain reserves seq_nos ahead: refused, nothing written.
        let err = node.execute(put("k", 1), false).unwrap_err();
        assert!(err.to_string().contains("high-water mark"), "{err}");
        assert_eq!(node.status().gtid_binlog_pos, "", "nothing was written");
        assert_failed(&node, sites::SEQ_NO_HWM);
        drop(node);
        restart_and_verify(dir.path(), durability, &Acked::default(), sites::SEQ_NO_HWM);
    }
    scenario.teardown();
}

#[test]
fn a_failed_relay_log_write_is_an_error_naming_the_relay_file() {
    let scenario = FailScenario::setup();
    for action in ACTIONS {
        let dir = tempfile::tempdir().unwrap();
        let mut relay = RelayWriter::create(&dir.path().join("relay"), 1 << 20).unwrap();
        relay.append(b"0123456789").unwrap();
        fail::cfg(sites::RELAY_WRITE, action).unwrap();
        let err = relay.append(b"0123456789").unwrap_err().to_string();
        assert!(err.contains("relay.000001") && err.contains("injected at relay-write"), "{action}: {err}");
        fail::remove(sites::RELAY_WRITE);
    }
    scenario.teardown();
}

/// With durability `none` a crash can lose what was acknowledged and streamed; the seq_nos reserved ahead are
/// never handed out again, and a clean stop leaves no gap.
#[test]
fn below_local_durability_seq_nos_are_reserved_ahead_and_settled_by_a_clean_stop() {
    let scenario = FailScenario::setup();
    let dir = tempfile::tempdir().unwrap();
    let node = Node::open(config(dir.path(), Durability::None), None).unwrap();
    assert!(node.status().replicas_may_be_ahead);
    let mut acked = Acked::default();
    for i in 0..3 {
        acked.commit(&node, &format!("k{i}")).unwrap();
    }
    node.stop();
    drop(node);
    let node = Node::open(config(dir.path(), Durability::None), None).unwrap();
    assert_eq!(node.execute(put("k3", 1), false).unwrap().gtid.seq, 4, "a clean stop leaves no gap");
    drop(node);
    // A crash (no stop): the restart allocates above the reservation, whatever the binlog kept.
    let node = Node::open(config(dir.path(), Durability::None), None).unwrap();
    let next = node.execute(put("k4", 1), false).unwrap().gtid.seq;
    assert!(next > 4 + ferry_core::binlog::hwm::SEQ_NO_RESERVE - 1, "{next}");
    scenario.teardown();
}

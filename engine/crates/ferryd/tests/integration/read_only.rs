//! Read-only across restarts: a read-only replica killed and started again with any command line comes back
//! read-only and refuses a client's write before a GTID is taken; a node the operator made writable stays
//! writable; a node that replicates starts read-only unless the operator ever made it writable.

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::Txn;
use serde_json::json;

fn replicate(replica: &NodeProc, master: &NodeProc) {
    let (code, body) = replica.post("/v1/replication/m1/change-master", json!({"master": master.listen}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let (code, body) = replica.post("/v1/replication/m1/start", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
}

fn converge(replica: &NodeProc, master: &NodeProc) {
    let target = master.status()["gtid_binlog_pos"].as_str().unwrap().to_string();
    let (code, body) =
        replica.post("/v1/wait-for-position", json!({"position": target, "timeout_ms": 60_000}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["reached"], true, "replica did not reach {target}: {}\n{}", replica.status(), replica.log());
}

fn set_read_only(node: &NodeProc, on: bool) {
    let (code, body) = node.post("/v1/read-only", json!({"read_only": on}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["read_only"], on, "{body}");
}

/// A client write: Ok(gtid) or the node's refusal as text.
fn try_write(node: &NodeProc, domain: u32) -> Result<String, String> {
    let mut c = node.client();
    rt().block_on(async { c.transact(Txn::new().domain(domain).increment("t", "k", "n", 1)).await })
        .map(|done| done.gtid.to_string())
        .map_err(|e| e.to_string())
}

#[test]
fn a_read_only_replica_killed_and_restarted_without_the_flag_comes_back_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    // Started writable (no --read-only), made read-only by the operator, then replicating.
    let mut replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    set_read_only(&replica, true);
    try_write(&master, 1).unwrap();
    replicate(&replica, &master);
    converge(&replica, &master);
    let before = replica.status();

    replica.sigkill();
    replica.restart(); // the same command line: no --read-only
    let status = replica.status();
    assert_eq!(status["read_only"], true, "{status}");
    let refused = try_write(&replica, 1).expect_err("a read-only replica took a client write");
    assert!(refused.to_lowercase().contains("read-only") || refused.to_lowercase().contains("read only"), "{refused}");
    // Refused before a GTID was taken: the binlog is where it was, and replication still applies what follows.
    assert_eq!(replica.status()["gtid_binlog_pos"], before["gtid_binlog_pos"]);
    try_write(&master, 1).unwrap();
    converge(&replica, &master);
    assert_eq!(replica.status()["read_only"], true);
}

#[test]
fn a_node_made_writable_stays_writable_and_a_first_start_with_the_flag_is_remembered() {
    let dir = tempfile::tempdir().unwrap();
    // First start with --read-only: recorded, so a start without it keeps read-only.
    let mut node = NodeProc::start(&dir.path().join("n"), 1, &["--read-only"]);
    assert_eq!(node.status()["read_only"], true);
    node.stop();
    node.extra.clear();
    node.restart();
    assert_eq!(node.status()["read_only"], true, "the recorded flag decides, not the missing --read-only");
    // The operator makes it writable: a restart with --read-only keeps it writable (the record decides).
    set_read_only(&node, false);
    node.sigkill();
    node.extra = vec!["--read-only".to_string()];
    node.restart();
    assert_eq!(node.status()["read_only"], false);
    try_write(&node, 0).expect("the node the operator made writable takes writes after its restart");
    assert!(
        node.log().contains("the node's recorded read-only flag decides"),
        "the start says why it ignored --read-only:\n{}",
        node.log()
    );
}

#[test]
fn a_node_that_replicates_without_a_recorded_flag_starts_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    // Writable at its first start (nothing recorded), then given a replication connection.
    let mut replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    assert_eq!(replica.status()["read_only"], false);
    try_write(&master, 3).unwrap();
    replicate(&replica, &master);
    converge(&replica, &master);
    replica.sigkill();
    replica.restart();
    assert_eq!(replica.status()["read_only"], true, "a replica never starts writable by default");
    try_write(&replica, 3).expect_err("a replica restarted without a recorded flag took a write");
    converge(&replica, &master);
}

#[test]
fn a_damaged_flag_starts_the_node_read_only_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProc::start(&dir.path().join("n"), 1, &[]);
    set_read_only(&node, false);
    node.stop();
    std::fs::write(dir.path().join("n/data/read-only.json"), b"{\"read_only\": fal").unwrap();
    node.restart();
    assert_eq!(node.status()["read_only"], true);
    assert!(node.log().contains("is not a read-only flag"), "{}", node.log());
    // Setting it through the admin API rewrites the file.
    set_read_only(&node, false);
    node.stop();
    node.restart();
    assert_eq!(node.status()["read_only"], false);
}

/// What a client that follows the master asks before writing: the master is writable and replicates from nobody;
/// a replica someone made writable says it replicates, so such clients never write to it.
#[test]
fn a_writable_replica_tells_clients_it_replicates() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    replicate(&replica, &master);
    let role = |node: &NodeProc| {
        let mut client = node.client();
        rt().block_on(async { client.role().await.unwrap() })
    };
    assert!(role(&master).is_master(), "{:?}", role(&master));
    assert_eq!(role(&replica), ferry_client::Role { read_only: true, replicates: true });
    set_read_only(&replica, false);
    let writable_replica = role(&replica);
    assert_eq!(writable_replica, ferry_client::Role { read_only: false, replicates: true });
    assert!(!writable_replica.is_master());
    // Its connection removed (a promotion), it is the master of its domains.
    let (code, body) = replica.post("/v1/replication/m1/stop", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let (code, body) = replica.delete_req("/v1/replication/m1");
    assert_eq!(code, 200, "{body}");
    assert!(role(&replica).is_master(), "{:?}", role(&replica));
}

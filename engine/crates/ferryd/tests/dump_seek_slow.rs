//! A real `ferryd` built with failpoints (`cargo test -p ferryd --features failpoints --test dump_seek_slow`): a
//! master that takes longer to find a replica's start than the replica waits for a sign of life (a long binlog
//! file read from its header, held up here by the `dump-seek` failpoint) sends heartbeats meanwhile, so the replica
//! keeps its connection instead of giving up and asking again — which would start the same long read over, for
//! ever.
#![cfg(feature = "failpoints")]

mod common;

use common::{post_ok, rt, NodeProc};
use ferry_client::Txn;
use ferry_core::row::Value;
use serde_json::json;

/// How long the master's seek is held up: well over what the replica below waits for a sign of life (three of its
/// 50 ms heartbeat intervals and a second).
const SEEK_HELD_MS: u64 = 4_000;

#[test]
fn a_replica_keeps_its_connection_while_the_master_finds_its_start_and_replicates() {
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("FAILPOINTS", format!("dump-seek=sleep({SEEK_HELD_MS})"));
    let master = NodeProc::start(&dir.path().join("m"), 1, &["--durability", "none"]);
    std::env::remove_var("FAILPOINTS");
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only", "--durability", "none"]);
    let mut c = master.client();
    rt().block_on(async {
        for i in 0..20i64 {
            c.transact(Txn::new().put("t", &format!("k{i}"), [("n".to_string(), Value::Int(i))].into())).await.unwrap();
        }
    });

    post_ok(&replica, "/v1/replication/m/change-master", json!({"master": master.listen, "heartbeat_ms": 50}));
    post_ok(&replica, "/v1/replication/m/start", json!({}));
    let want = master.status()["gtid_binlog_pos"].clone();
    replica.eventually(
        "the replica to apply the master's transactions",
        || replica.status()["gtid_current_pos"].clone(),
        |pos| *pos == want,
    );
    let (code, listed) = replica.get("/v1/replication");
    assert_eq!(code, 200, "{listed}");
    let body = &listed["connections"][0];
    assert_eq!(body["reconnects"], 0, "the replica gave up on the master while it sought: {body}");
    assert!(body["last_heartbeat_us"].as_u64().is_some(), "no heartbeat during the seek: {body}");
    assert!(!master.log().contains("refused a replica"), "the master refused the replica:\n{}", master.log());
}

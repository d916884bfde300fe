//! A real `ferryd` built with failpoints (`cargo test -p ferryd --features failpoints --test storage_failed`):
//! a failed binlog fsync and a failed relay log write each put the node in the "storage failed" state — status
//! `failed`, read-only, `ferry_storage_failed 1`, clients refused with `NODE_FAILED` — and a restart loses no
//! acknowledged transaction.
#![cfg(feature = "failpoints")]

mod common;

use common::{rt, NodeProc, TOKEN};
use ferry_client::{ClientError, ErrorCode, Txn};
use ferry_core::row::Value;
use serde_json::json;

fn put(i: i64) -> Txn {
    Txn::new().put("t", &format!("k{i}"), [("n".to_string(), Value::Int(i))].into())
}

fn assert_storage_failed(node: &NodeProc, what: &str) {
    let status = node.status();
    let failed = status["failed"].as_str().unwrap_or_else(|| panic!("no failure in the status: {status}"));
    assert!(failed.contains(what) && failed.contains("injected at"), "{failed}");
    assert_eq!(status["read_only"], true);
    assert!(node.get_text("/metrics").contains("ferry_storage_failed 1"));
    let err = rt().block_on(node.client().transact(put(-1))).unwrap_err();
    let ClientError::Server { code, message, .. } = err else { panic!("{err}") };
    assert_eq!(code, Some(ErrorCode::NodeFailed), "{message}");
    assert!(message.starts_with("storage failed"), "{message}");
}

// One test: FAILPOINTS is read from the environment the nodes are started with.
#[test]
fn a_failed_fsync_and_a_failed_relay_write_are_fail_stop_and_a_restart_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();

    // The master's 21st binlog fsync fails.
    std::env::set_var("FAILPOINTS", "binlog-fsync=20*off->return(eio)");
    let mut master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    std::env::remove_var("FAILPOINTS");
    let mut c = master.client();
    let mut acked = Vec::new();
    for i in 0..100 {
        match rt().block_on(c.transact(put(i))) {
            Ok(_) => acked.push(i),
            Err(_) => break,
        }
    }
    assert_eq!(acked.len(), 20, "every commit after the failure is refused");
    assert_storage_failed(&master, "binlog write");
    master.sigkill();
    master.restart();
    assert_eq!(master.status()["failed"], serde_json::Value::Null);
    let mut c = master.client();
    for i in &acked {
        assert!(rt().block_on(c.get("t", &format!("k{i}"))).unwrap().is_some(), "acknowledged k{i} lost");
    }

    // A replica whose relay log cannot be written fails as a whole, not only its connection.
    std::env::set_var("FAILPOINTS", "relay-write=return(enospc)");
    let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    std::env::remove_var("FAILPOINTS");
    let (code, body) =
        replica.post("/v1/replication/main/change-master", json!({"master": master.listen}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    // The relay log's first write is at start: the start itself may be refused.
    let _ = replica.post("/v1/replication/main/start", json!({}), Some(TOKEN));
    replica.eventually(
        "the relay write failure failing the node",
        || replica.status()["failed"].clone(),
        |f| !f.is_null(),
    );
    assert_storage_failed(&replica, "relay log write");
}

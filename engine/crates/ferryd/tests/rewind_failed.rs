//! A real `ferryd` built with failpoints (`cargo test -p ferryd --features failpoints --test rewind_failed`): an
//! I/O error in the middle of a rewind (after its intent is written) is fail-stop — the rewind answers the error,
//! the node says its storage failed and acknowledges nothing — and the restart completes the rewind from its
//! intent: binlog, store and archive as if it had not failed. An error before the intent changes nothing.
#![cfg(feature = "failpoints")]

mod common;

use common::{post_ok, rt, NodeProc, TOKEN};
use ferry_client::Txn;
use ferry_core::row::Value;
use serde_json::{json, Value as Json};

fn put(node: &NodeProc, from: i64, n: i64) {
    let mut c = node.client();
    rt().block_on(async {
        for i in from..from + n {
            c.transact(Txn::new().put("t", &format!("k{}", i % 3), [("n".to_string(), Value::Int(i))].into()))
                .await
                .unwrap();
        }
    });
}

fn checksums(node: &NodeProc) -> Json {
    let (code, body) = node.get("/v1/checksums");
    assert_eq!(code, 200, "{body}");
    body
}

// One test: FAILPOINTS is read from the environment the nodes are started with.
#[test]
fn a_rewind_failing_after_its_intent_is_fail_stop_and_completed_by_the_restart() {
    let dir = tempfile::tempdir().unwrap();

    // Before the intent: the archive cannot be written; nothing changes, the node goes on.
    std::env::set_var("FAILPOINTS", "rewind-archive=return(enospc)");
    let mut node = NodeProc::start(dir.path(), 1, &[]);
    std::env::remove_var("FAILPOINTS");
    put(&node, 0, 4);
    let at = checksums(&node);
    put(&node, 4, 5);
    let before = (node.binlog_gtids(), checksums(&node));
    post_ok(&node, "/v1/read-only", json!({"read_only": true}));
    let (code, answer) = node.post("/v1/rewind", json!({"to": "0-1-4"}), Some(TOKEN));
    assert_eq!(code, 500, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("injected at rewind-archive"), "{answer}");
    assert_eq!((node.binlog_gtids(), checksums(&node)), before, "nothing changed");
    assert_eq!(node.status()["failed"], Json::Null, "an error before the intent is not a storage failure");
    node.stop();

    // After the intent: the binlog's cut fails.
    std::env::set_var("FAILPOINTS", "rewind-truncate=return(eio)");
    node.restart();
    std::env::remove_var("FAILPOINTS");
    let (code, answer) = node.post("/v1/rewind", json!({"to": "0-1-4"}), Some(TOKEN));
    assert_eq!(code, 500, "{answer}");
    let failed = node.status()["failed"].as_str().unwrap_or_default().to_string();
    assert!(failed.contains("rewind") && failed.contains("injected at rewind-truncate"), "{failed}");
    node.sigkill();

    node.restart();
    assert_eq!(node.status()["failed"], Json::Null);
    assert_eq!(node.status()["gtid_binlog_pos"], "0-1-4", "the restart completed the rewind");
    assert_eq!(checksums(&node), at);
    assert_eq!(node.binlog_gtids(), before.0[..4]);
    let (_, listing) = node.get("/v1/rewind/archives");
    assert_eq!(listing["archives"].as_array().unwrap().len(), 1, "{listing}");
}

//! Transactions over TCP against a real `ferryd`: row operations, per-key serialisation, domains, privileged
//! GTIDs and strict mode, read-only, and waiting for a position.

use std::time::Duration;

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::{Client, ErrorCode, Txn};
use ferry_core::row::{Row, Value};

fn row(n: i64) -> Row {
    [("n".to_string(), Value::Int(n))].into()
}

#[test]
fn two_clients_incrementing_one_key_10000_times_each_end_at_20000() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let addr = node.listen.clone();
    rt().block_on(async move {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let addr = addr.clone();
                tokio::spawn(async move {
                    let mut c = Client::connect(&addr).await.unwrap();
                    for _ in 0..10_000 {
                        c.increment("counters", "hot", "n", 1).await.unwrap();
                    }
                })
            })
            .collect();
        for w in workers {
            w.await.unwrap();
        }
        let mut c = Client::connect(&addr).await.unwrap();
        assert_eq!(c.get("counters", "hot").await.unwrap(), Some(row(20_000)));
    });
    assert_eq!(node.status()["gtid_binlog_pos"], "0-1-20000");
}

#[test]
fn put_delete_increment_and_read_one_row() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let mut c = node.client();
    rt().block_on(async {
        let first = c
            .transact(Txn::new().put("t", "a", row(5)).increment("t", "a", "n", 2).put("t", "b", row(1)))
            .await
            .unwrap();
        assert_eq!(first.gtid.to_string(), "0-1-1");
        assert_eq!(c.get("t", "a").await.unwrap(), Some(row(7)));
        c.transact(Txn::new().delete("t", "b")).await.unwrap();
        assert_eq!(c.get("t", "b").await.unwrap(), None);
        assert_eq!(c.get("never_written", "x").await.unwrap(), None);
    });
}

#[test]
fn a_transaction_may_choose_its_domain_and_seq_nos_count_per_domain() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 7, &["--domain-id", "3"]);
    let mut c = node.client();
    rt().block_on(async {
        assert_eq!(c.increment("t", "k", "n", 1).await.unwrap().gtid.to_string(), "3-7-1");
        assert_eq!(
            c.transact(Txn::new().domain(9).increment("t", "k", "n", 1)).await.unwrap().gtid.to_string(),
            "9-7-1"
        );
        assert_eq!(
            c.transact(Txn::new().domain(9).increment("t", "k", "n", 1)).await.unwrap().gtid.to_string(),
            "9-7-2"
        );
        assert_eq!(c.increment("t", "k", "n", 1).await.unwrap().gtid.to_string(), "3-7-2");
    });
    assert_eq!(node.status()["gtid_binlog_pos"], "3-7-2,9-7-2");
}

#[test]
fn privileged_gtids_need_the_token_and_obey_strict_mode() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let mut c = node.client();
    rt().block_on(async {
        let err = c.transact(Txn::new().gtid(5, 100).increment("t", "k", "n", 1)).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::PermissionDenied), "{err}");
        assert_eq!(c.auth("wrong-token-wrong-token").await.unwrap_err().code(), Some(ErrorCode::PermissionDenied));
        c.auth(TOKEN).await.unwrap();
        // Replaying someone else's GTID keeps it, and leaves a hole before it: nothing breaks.
        assert_eq!(
            c.transact(Txn::new().gtid(5, 100).increment("t", "k", "n", 1)).await.unwrap().gtid.to_string(),
            "0-5-100"
        );
        // The counter was raised: the next allocated seq_no follows it.
        assert_eq!(c.increment("t", "k", "n", 1).await.unwrap().gtid.to_string(), "0-1-101");
        let err = c.transact(Txn::new().gtid(6, 50).increment("t", "k", "n", 1)).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::StrictMode));
        assert!(err.to_string().contains("0-6-50") && err.to_string().contains("0-1-101"), "{err}");
        assert_eq!(c.get("t", "k").await.unwrap(), Some(row(2)), "the refused transaction wrote nothing");
    });
}

#[test]
fn read_only_refuses_writes_with_a_clear_error_and_reads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let mut c = node.client();
    rt().block_on(c.increment("t", "k", "n", 1)).unwrap();
    assert_eq!(node.post("/v1/read-only", serde_json::json!({"read_only": true}), Some(TOKEN)).0, 200);
    let err = rt().block_on(c.increment("t", "k", "n", 1)).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::ReadOnly));
    assert!(err.to_string().contains("read-only"), "{err}");
    assert_eq!(rt().block_on(c.get("t", "k")).unwrap(), Some(row(1)));
    assert_eq!(node.status()["gtid_binlog_pos"], "0-1-1");
    node.post("/v1/read-only", serde_json::json!({"read_only": false}), Some(TOKEN));
    rt().block_on(c.increment("t", "k", "n", 1)).unwrap();
}

/// A stop answers the connections it ends before the node exits: a client between requests reads "shutting down"
/// rather than finding its connection cut.
#[test]
fn a_stop_tells_a_client_between_requests_that_the_node_is_shutting_down() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProc::start(dir.path(), 1, &[]);
    let mut client = node.client();
    rt().block_on(client.hello("between requests")).unwrap();
    node.stop();
    let (_, answer) = rt().block_on(client.read_response()).expect("an answer before the connection closed");
    match answer {
        ferry_core::protocol::Response::Error { code, message } => {
            assert_eq!(ErrorCode::from_u16(code), Some(ErrorCode::ShuttingDown), "{message}")
        }
        other => panic!("expected the node's shutting-down answer, got {other:?}"),
    }
}

#[test]
fn waiting_for_a_position_returns_when_reached_or_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let addr = node.listen.clone();
    rt().block_on(async move {
        let mut waiter = Client::connect(&addr).await.unwrap();
        let err = waiter.wait_for_position("0-1-1", Duration::from_millis(50)).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::Timeout));
        let wait = tokio::spawn(async move { waiter.wait_for_position("0-1-3", Duration::from_secs(20)).await });
        let mut writer = Client::connect(&addr).await.unwrap();
        for _ in 0..3 {
            writer.increment("t", "k", "n", 1).await.unwrap();
        }
        assert_eq!(wait.await.unwrap().unwrap().to_string(), "0-1-3");
    });
}

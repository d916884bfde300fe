//! Refusals at the edges, over real sockets against real `ferryd` processes: a transaction whose row event is
//! over `--event-bytes-max` (a 100 MiB one at the default 64 MiB, and the exact boundary of a lowered limit), a
//! domain whose seq_no is exhausted, and settings refused at start-up. Each refusal writes nothing and the node
//! keeps serving and replicating.

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::Txn;
use ferry_core::protocol::ErrorCode;
use ferry_core::row::{Row, Value};
use serde_json::json;

fn text_row(len: usize) -> Row {
    [("v".to_string(), Value::Text("x".repeat(len)))].into()
}

fn replicate(replica: &NodeProc, master: &NodeProc) {
    let (code, body) = replica.post("/v1/replication/m/change-master", json!({"master": master.listen}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let (code, body) = replica.post("/v1/replication/m/start", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
}

fn wait_for(node: &NodeProc, position: &str) {
    let (code, body) =
        node.post("/v1/wait-for-position", json!({"position": position, "timeout_ms": 30_000}), Some(TOKEN));
    assert_eq!(code, 200);
    assert_eq!(body["reached"], true, "never reached {position}: {}\n{}", node.status(), node.log());
}

fn metric(node: &NodeProc, name: &str) -> String {
    let text = node.get_text("/metrics");
    text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in\n{text}")).to_string()
}

/// 100 MiB in one transaction, at the default 64 MiB event limit (frames and transactions are allowed up to
/// 128 MiB, so the event limit is the one that refuses it).
#[test]
fn a_100_mib_transaction_is_refused_with_size_and_limit_and_the_node_keeps_serving_and_replicating() {
    let dir = tempfile::tempdir().unwrap();
    let big_limits = ["--max-frame-bytes", "134217728", "--max-txn-bytes", "134217728"];
    let master = NodeProc::start(&dir.path().join("m"), 1, &big_limits);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    replicate(&replica, &master);
    assert_eq!(master.status()["event_bytes_max"], 64 << 20);

    let mut c = master.client();
    let err = rt()
        .block_on(c.transact(Txn::new().put("t", "big", text_row(100 << 20))))
        .expect_err("a 100 MiB event is over the limit");
    assert_eq!(err.code(), Some(ErrorCode::EventTooLarge), "{err}");
    let message = err.to_string();
    assert!(message.contains(&(64usize << 20).to_string()), "names the limit: {message}");
    let bytes: usize = message
        .split_whitespace()
        .find_map(|w| w.parse().ok().filter(|n| *n > 100 << 20))
        .unwrap_or_else(|| panic!("names the event's size: {message}"));
    assert!(bytes > 100 << 20, "{message}");

    // Nothing was written, no seq_no was taken, and the same connection goes on.
    let status = master.status();
    assert_eq!(status["gtid_binlog_pos"], "");
    assert_eq!(status["counters"]["refused_event_too_large"], 1);
    assert_eq!(status["failed"], serde_json::Value::Null);
    assert!(metric(&master, "ferry_txns_refused_event_too_large").ends_with(" 1"));
    assert!(metric(&master, "ferry_event_bytes_max").ends_with(&format!(" {}", 64 << 20)));
    let next = rt().block_on(c.transact(Txn::new().put("t", "small", text_row(10)))).unwrap();
    assert_eq!(next.gtid.to_string(), "0-1-1");
    wait_for(&replica, "0-1-1");
    assert_eq!(replica.binlog_gtids().iter().map(|g| g.to_string()).collect::<Vec<_>>(), ["0-1-1"]);
    assert!(master.binlog_transactions().iter().all(|t| t.changes.iter().all(|c| c.key != "big")));
}

/// The limit is exact: a row event of exactly `--event-bytes-max` bytes commits, one byte more is refused.
#[test]
fn a_lowered_event_limit_admits_exactly_its_size_and_refuses_one_byte_more() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 64 << 10;
    let master = NodeProc::start(&dir.path().join("m"), 1, &["--event-bytes-max", &limit.to_string()]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    replicate(&replica, &master);
    // Rows body of one new row t/k with one text field v of L bytes: count (4), table (4 + 1), key (4 + 1),
    // absent before image (1), after image (1 + 4 + (4 + 1) + 1 + 4 + L) = 30 + L.
    let at_limit = limit - 30;
    let mut c = master.client();
    let err = rt().block_on(c.transact(Txn::new().put("t", "k", text_row(at_limit + 1)))).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::EventTooLarge), "{err}");
    assert!(err.to_string().contains(&format!("{} bytes", limit + 1)), "{err}");
    assert!(err.to_string().contains(&limit.to_string()), "{err}");
    let committed = rt().block_on(c.transact(Txn::new().put("t", "k", text_row(at_limit)))).unwrap();
    assert_eq!(committed.gtid.to_string(), "0-1-1");
    wait_for(&replica, "0-1-1");
    assert_eq!(replica.status()["gtid_binlog_pos"], "0-1-1");
}

#[test]
fn a_domain_at_the_last_seq_no_refuses_the_next_transaction_naming_the_domain() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let mut c = master.client();
    rt().block_on(async {
        c.auth(TOKEN).await.unwrap();
        let last = Txn::new().domain(4).gtid(1, u64::MAX).increment("t", "k", "n", 1);
        assert_eq!(c.transact(last).await.unwrap().gtid.to_string(), format!("4-1-{}", u64::MAX));
        let err = c.transact(Txn::new().domain(4).increment("t", "k", "n", 1)).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::SeqNoExhausted), "{err}");
        assert!(err.to_string().contains("domain 4"), "{err}");
        // The node keeps serving other domains.
        assert_eq!(
            c.transact(Txn::new().domain(0).increment("t", "k", "n", 1)).await.unwrap().gtid.to_string(),
            "0-1-1"
        );
    });
    assert_eq!(master.status()["gtid_binlog_pos"], format!("0-1-1,4-1-{}", u64::MAX));
}

/// Runs `ferryd` with settings it must refuse; returns its stderr.
fn refused_at_start(extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ferryd"))
        .args(["--server-id", "1", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(extra)
        .output()
        .unwrap();
    assert!(!out.status.success(), "ferryd started with {extra:?}");
    assert!(out.stdout.is_empty(), "it never reported ready");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn naive_scheduling_under_semi_sync_is_refused_at_start_up() {
    for durability in ["network", "local+network"] {
        let err = refused_at_start(&["--commit-mode", "naive-scheduling", "--durability", durability]);
        assert!(err.contains("naive-scheduling") && err.contains(durability) && err.contains("semi-sync"), "{err}");
    }
    // Without semi-sync it still runs (the benchmark comparison).
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--commit-mode", "naive-scheduling"]);
    let mut c = node.client();
    rt().block_on(async {
        for _ in 0..3 {
            c.transact(Txn::new().increment("t", "k", "n", 1)).await.unwrap();
        }
    });
    assert_eq!(node.status()["gtid_binlog_pos"], "0-1-3");
}

#[test]
fn an_event_limit_above_the_binlog_format_is_refused_at_start_up() {
    let err = refused_at_start(&["--event-bytes-max", &((64usize << 20) + 1).to_string()]);
    assert!(err.contains("event_bytes_max") && err.contains(&(64usize << 20).to_string()), "{err}");
}

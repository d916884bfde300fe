//! START ... UNTIL over real `ferryd` processes, by MariaDB's rule: per listed domain the connection applies
//! transactions up to and including the UNTIL GTID's seq_no and stops before the first one with a greater
//! seq_no — also when the UNTIL seq_no falls in a hole; once every listed domain has reached or passed its UNTIL
//! the connection stops; unlisted domains stop at once.

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::Txn;
use serde_json::{json, Value};

fn connection(node: &NodeProc, name: &str) -> Value {
    let (_, body) = node.get("/v1/replication");
    body["connections"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned().unwrap_or(Value::Null)
}

fn wait_until_reached(node: &NodeProc, name: &str) -> Value {
    let what = format!("connection {name} at its UNTIL");
    node.eventually(&what, || connection(node, name), |c| c["sql_state"] == "until_reached")
}

#[test]
fn until_a_position_in_a_hole_stops_before_the_first_transaction_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    let mut c = master.client();
    rt().block_on(async {
        c.auth(TOKEN).await.unwrap();
        // Domain 0: 0-1-1..3, then a client-set seq_no jump to 10 leaves the hole 4..9, then 0-1-11.
        for _ in 0..3 {
            c.transact(Txn::new().domain(0).increment("a", "k", "n", 1)).await.unwrap();
        }
        c.transact(Txn::new().domain(0).gtid(1, 10).increment("a", "k", "n", 1)).await.unwrap();
        c.transact(Txn::new().domain(0).increment("a", "k", "n", 1)).await.unwrap();
        // Domain 2 (UNTIL on an existing GTID): 2-1-1..4. Domain 5 is not listed.
        for _ in 0..4 {
            c.transact(Txn::new().domain(2).increment("b", "k", "n", 1)).await.unwrap();
        }
        c.transact(Txn::new().domain(5).increment("c", "k", "n", 1)).await.unwrap();
    });
    assert_eq!(master.status()["gtid_binlog_pos"], "0-1-11,2-1-4,5-1-1");

    let (code, body) = replica.post("/v1/replication/m/change-master", json!({"master": master.listen}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    // 0-1-5 is in the hole: domain 0 stops before 0-1-10, at 0-1-3.
    let (code, body) = replica.post("/v1/replication/m/start", json!({"until": "0-1-5,2-1-2"}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let conn = wait_until_reached(&replica, "m");
    assert_eq!(conn["last_error"], Value::Null, "{conn}");
    let status = replica.status();
    assert_eq!(status["gtid_binlog_pos"], "0-1-3,2-1-2", "{status}");
    assert_eq!(status["gtid_slave_pos"], "0-1-3,2-1-2");
    let applied: Vec<String> = replica.binlog_gtids().iter().map(|g| g.to_string()).collect();
    assert_eq!(applied, ["0-1-1", "0-1-2", "0-1-3", "2-1-1", "2-1-2"]);

    // Started again without UNTIL, it continues from there across the hole.
    let (code, body) = replica.post("/v1/replication/m/start", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let (code, body) = replica.post(
        "/v1/wait-for-position",
        json!({"position": "0-1-11,2-1-4,5-1-1", "timeout_ms": 30_000}),
        Some(TOKEN),
    );
    assert_eq!(code, 200);
    assert_eq!(body["reached"], true, "{}\n{}", replica.status(), replica.log());
}

//! The DBA's replication controls between real `ferryd` processes: the skip counter and the domain filters.

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::Txn;
use serde_json::{json, Value};

/// Writes one transaction per key into `domain`: `t/<key>` gets `n = 1`.
fn write_keys(node: &NodeProc, domain: u32, keys: &[&str]) {
    let mut c = node.client();
    rt().block_on(async {
        for key in keys {
            c.transact(Txn::new().domain(domain).increment("t", key, "n", 1)).await.unwrap();
        }
    });
}

fn has_row(node: &NodeProc, key: &str) -> bool {
    let mut c = node.client();
    rt().block_on(c.get("t", key)).unwrap().is_some()
}

fn post(node: &NodeProc, path: &str, body: Value) -> (u16, Value) {
    node.post(path, body, Some(TOKEN))
}

fn connection(node: &NodeProc, name: &str) -> Value {
    let (_, body) = node.get("/v1/replication");
    body["connections"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned().unwrap_or(Value::Null)
}

fn slave_pos(node: &NodeProc) -> String {
    node.get("/v1/replication").1["gtid_slave_pos"].as_str().unwrap().to_string()
}

/// Polls until `check` holds on the node's replication status (bounded by 30 s).
fn wait_replication(node: &NodeProc, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    node.eventually(&format!("replication: {what}"), || node.get("/v1/replication").1, check)
}

fn wait_slave_pos(node: &NodeProc, position: &str) {
    wait_replication(node, &format!("gtid_slave_pos {position}"), |b| b["gtid_slave_pos"] == position);
}

fn start(node: &NodeProc, name: &str) {
    let (code, body) = post(node, &format!("/v1/replication/{name}/start"), json!({}));
    assert_eq!(code, 200, "{body}");
}

fn stop(node: &NodeProc, name: &str) {
    let (code, body) = post(node, &format!("/v1/replication/{name}/stop"), json!({}));
    assert_eq!(code, 200, "{body}");
}

fn change_master(node: &NodeProc, name: &str, body: Value) -> (u16, Value) {
    post(node, &format!("/v1/replication/{name}/change-master"), body)
}

#[test]
fn the_skip_counter_passes_over_the_next_transactions_and_records_their_gtids() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    write_keys(&master, 0, &["a1", "a2", "a3"]);
    let (code, body) = change_master(&replica, "m", json!({"master": master.listen}));
    assert_eq!(code, 200, "{body}");
    start(&replica, "m");
    wait_slave_pos(&replica, "0-1-3");

    let (code, body) = post(&replica, "/v1/replication/m/skip-counter", json!({"count": 2}));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("conflict")), "refused while running: {body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("running"), "{body}");
    let (code, _) = post(&replica, "/v1/replication/nope/skip-counter", json!({"count": 1}));
    assert_eq!(code, 404);
    let (code, _) = replica.post("/v1/replication/m/skip-counter", json!({"count": 1}), None);
    assert_eq!(code, 401);

    stop(&replica, "m");
    write_keys(&master, 0, &["s4", "s5", "s6"]);
    let (code, body) = post(&replica, "/v1/replication/m/skip-counter", json!({"count": -1}));
    assert_eq!(code, 400, "{body}");
    let (code, body) = post(&replica, "/v1/replication/m/skip-counter", json!({"count": 2}));
    assert_eq!(code, 200, "{body}");
    assert_eq!(connection(&replica, "m")["skip_counter"], 2, "shown while stopped");

    start(&replica, "m");
    wait_slave_pos(&replica, "0-1-6");
    let conn = connection(&replica, "m");
    assert_eq!(conn["transactions_skipped"], 2, "{conn}");
    assert_eq!(conn["skip_counter"], 0, "{conn}");
    assert!(!has_row(&replica, "s4") && !has_row(&replica, "s5"), "the two next transactions were not applied");
    assert!(has_row(&replica, "s6"), "the one after them was");
    let s = replica.status();
    assert_eq!(s["gtid_binlog_pos"], "0-1-6");
    let logged: Vec<String> = replica.binlog_gtids().iter().map(|g| g.to_string()).collect();
    assert_eq!(logged, ["0-1-1", "0-1-2", "0-1-3", "0-1-6"], "skipped transactions are not logged here");

    // Their GTIDs are in gtid_slave_pos for good: a restart of the connection and of the node fetches nothing again.
    stop(&replica, "m");
    let mut replica = replica;
    replica.stop();
    replica.restart();
    assert_eq!(slave_pos(&replica), "0-1-6");
    start(&replica, "m");
    write_keys(&master, 0, &["a7"]);
    wait_slave_pos(&replica, "0-1-7");
    assert!(!has_row(&replica, "s4") && !has_row(&replica, "s5"));
    assert_eq!(connection(&replica, "m")["transactions_skipped"], 0);
}

#[test]
fn the_skip_counter_is_refused_when_the_start_position_has_several_domains() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    write_keys(&master, 0, &["a"]);
    write_keys(&master, 5, &["b"]);
    let (code, body) = change_master(&replica, "m", json!({"master": master.listen}));
    assert_eq!(code, 200, "{body}");
    start(&replica, "m");
    wait_slave_pos(&replica, "0-1-1,5-1-1");
    stop(&replica, "m");
    let (code, body) = post(&replica, "/v1/replication/m/skip-counter", json!({"count": 1}));
    assert_eq!(code, 409, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("several domains"), "{body}");
    // Clearing it is always allowed.
    let (code, body) = post(&replica, "/v1/replication/m/skip-counter", json!({"count": 0}));
    assert_eq!(code, 200, "{body}");
}

#[test]
fn domain_filters_apply_only_the_chosen_domains_and_still_advance_gtid_slave_pos() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    write_keys(&master, 1, &["d1"]);
    write_keys(&master, 2, &["d2"]);
    write_keys(&master, 3, &["d3"]);

    let (code, body) =
        change_master(&replica, "m", json!({"master": master.listen, "do_domain_ids": [1], "ignore_domain_ids": [2]}));
    assert_eq!(code, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("cannot both be set"), "{body}");

    let (code, body) = change_master(&replica, "m", json!({"master": master.listen, "ignore_domain_ids": [2, 3]}));
    assert_eq!(code, 200, "{body}");
    let conn = connection(&replica, "m");
    assert_eq!(conn["ignore_domain_ids"], json!([2, 3]), "{conn}");
    assert_eq!(conn["do_domain_ids"], json!([]), "{conn}");
    start(&replica, "m");
    wait_slave_pos(&replica, "1-1-1,2-1-1,3-1-1");
    assert!(has_row(&replica, "d1") && !has_row(&replica, "d2") && !has_row(&replica, "d3"));
    assert_eq!(replica.status()["gtid_binlog_pos"], "1-1-1", "filtered transactions are not logged here");
    let conn = connection(&replica, "m");
    assert_eq!(conn["transactions_filtered"], 2, "{conn}");
    assert_eq!(conn["lag"]["2"]["transactions"], 0, "a filtered domain is not lagging: {conn}");

    // Persisted with the connection: after a restart the filter still holds.
    stop(&replica, "m");
    let mut replica = replica;
    replica.stop();
    replica.restart();
    assert_eq!(connection(&replica, "m")["ignore_domain_ids"], json!([2, 3]));
    start(&replica, "m");
    write_keys(&master, 2, &["d2b"]);
    write_keys(&master, 1, &["d1b"]);
    wait_slave_pos(&replica, "1-1-2,2-1-2,3-1-1");
    assert!(has_row(&replica, "d1b") && !has_row(&replica, "d2b"));

    // DO_DOMAIN_IDS: only the listed domain from now on; the earlier ones stay passed over (their GTIDs are in
    // gtid_slave_pos, as MariaDB's filters leave them).
    stop(&replica, "m");
    let (code, body) = change_master(&replica, "m", json!({"master": master.listen, "do_domain_ids": [3]}));
    assert_eq!(code, 200, "{body}");
    start(&replica, "m");
    write_keys(&master, 3, &["d3b"]);
    write_keys(&master, 1, &["d1c"]);
    wait_slave_pos(&replica, "1-1-3,2-1-2,3-1-2");
    assert!(has_row(&replica, "d3b") && !has_row(&replica, "d1c") && !has_row(&replica, "d3"));
    assert_eq!(connection(&replica, "m")["do_domain_ids"], json!([3]));
}

#[test]
fn reset_slave_clears_a_stopped_connection_but_not_gtid_slave_pos_and_all_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    write_keys(&master, 0, &["a1", "a2", "a3"]);
    // A position the master's binlog does not have: the connection stops on an error, which RESET SLAVE clears.
    let (code, body) = change_master(&replica, "m", json!({"master": master.listen, "position": "0-5-2"}));
    assert_eq!(code, 200, "{body}");
    start(&replica, "m");
    // Stopped by it: the error is recorded a moment before both sides have stopped.
    let failed = wait_replication(&replica, "an IO error that stopped the connection", |b| {
        b["connections"][0]["last_error"]["code"].as_str().is_some_and(|c| c == "DIVERGED")
            && b["connections"][0]["running"] == false
    });
    assert_eq!(failed["connections"][0]["io_state"], "error");

    let (code, body) = change_master(&replica, "m", json!({"master": master.listen, "position": "0-1-2"}));
    assert_eq!(code, 200, "{body}");
    start(&replica, "m");
    wait_slave_pos(&replica, "0-1-3");
    let (code, body) = post(&replica, "/v1/replication/m/reset", json!({}));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("conflict")), "refused while running: {body}");
    stop(&replica, "m");
    let relay = replica.dir.join("data").join("relay").join("m");
    assert!(relay.exists(), "the stopped connection kept its relay log");
    let (code, _) = post(&replica, "/v1/replication/nope/reset", json!({}));
    assert_eq!(code, 404);
    let (code, body) = post(&replica, "/v1/replication/m/reset", json!({"all": "yes"}));
    assert_eq!((code, body["error"]["code"].as_str()), (400, Some("bad_request")), "{body}");

    let (code, body) = post(&replica, "/v1/replication/m/reset", json!({}));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["gtid_slave_pos"], "0-1-3", "RESET SLAVE leaves gtid_slave_pos as it is");
    assert!(!relay.exists(), "the relay log is gone");
    let conn = connection(&replica, "m");
    assert_eq!(conn["master"], master.listen.as_str(), "the settings are kept: {conn}");
    assert_eq!(conn["received_position"], "", "{conn}");
    assert_eq!(conn["applied_position"], "", "{conn}");
    assert_eq!(conn["transactions_applied"], 0, "{conn}");
    assert_eq!(conn["last_error"], Value::Null, "{conn}");
    assert_eq!(slave_pos(&replica), "0-1-3");

    // It starts again from gtid_slave_pos: nothing is applied twice.
    start(&replica, "m");
    write_keys(&master, 0, &["a4"]);
    wait_slave_pos(&replica, "0-1-4");
    assert_eq!(connection(&replica, "m")["transactions_applied"], 1);

    stop(&replica, "m");
    let (code, body) = post(&replica, "/v1/replication/m/reset", json!({"all": true}));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["removed"], true);
    assert_eq!(connection(&replica, "m"), Value::Null, "RESET SLAVE ALL removes the connection");
    let saved = std::fs::read_to_string(replica.dir.join("data").join("replication.json")).unwrap();
    assert!(!saved.contains(master.listen.as_str()), "and its saved settings: {saved}");
    assert_eq!(slave_pos(&replica), "0-1-4", "gtid_slave_pos stays");
}

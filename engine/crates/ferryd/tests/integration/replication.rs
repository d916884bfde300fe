//! GTID replication between real `ferryd` processes: streaming, crash-safe resume, reconnects, and every error
//! that must stop replication with the domain and the GTIDs named.

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::Txn;
use serde_json::{json, Value};

fn write(node: &NodeProc, domain: u32, n: usize) {
    let mut c = node.client();
    rt().block_on(async {
        for i in 0..n {
            c.transact(Txn::new().domain(domain).increment("t", &format!("k{}", i % 7), "n", 1)).await.unwrap();
        }
    });
}

fn change_master(replica: &NodeProc, name: &str, body: Value) -> (u16, Value) {
    replica.post(&format!("/v1/replication/{name}/change-master"), body, Some(TOKEN))
}

fn start(replica: &NodeProc, name: &str, body: Value) -> (u16, Value) {
    replica.post(&format!("/v1/replication/{name}/start"), body, Some(TOKEN))
}

fn replicate(replica: &NodeProc, name: &str, master: &NodeProc) {
    let (code, body) = change_master(replica, name, json!({"master": master.listen}));
    assert_eq!(code, 200, "{body}");
    let (code, body) = start(replica, name, json!({}));
    assert_eq!(code, 200, "{body}");
}

/// Waits (bounded) until the replica's binlog position has reached the master's.
fn converge(replica: &NodeProc, master: &NodeProc) {
    let target = master.status()["gtid_binlog_pos"].as_str().unwrap().to_string();
    let (code, body) =
        replica.post("/v1/wait-for-position", json!({"position": target, "timeout_ms": 30_000}), Some(TOKEN));
    assert_eq!(code, 200);
    assert_eq!(body["reached"], true, "replica did not reach {target}: {}\n{}", replica.status(), replica.log());
}

fn checksums(node: &NodeProc) -> Value {
    node.get("/v1/checksums").1["tables"].clone()
}

fn connection(node: &NodeProc, name: &str) -> Value {
    let (_, body) = node.get("/v1/replication");
    body["connections"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned().unwrap_or(Value::Null)
}

/// Polls until `check` holds on the connection's status (bounded by 30 s).
fn wait_connection(node: &NodeProc, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    node.eventually(&format!("connection {name}: {what}"), || connection(node, name), check)
}

#[test]
fn a_replica_streams_the_masters_binlog_keeping_gtids_and_order() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    write(&master, 1, 30);
    write(&master, 2, 20);
    replicate(&replica, "m1", &master);
    converge(&replica, &master);
    // Live streaming after catching up.
    write(&master, 1, 15);
    converge(&replica, &master);
    assert_eq!(checksums(&replica), checksums(&master));
    let s = replica.status();
    assert_eq!(s["gtid_binlog_pos"], "1-1-45,2-1-20", "the replica binlogs the original GTIDs");
    assert_eq!(s["gtid_slave_pos"], "1-1-45,2-1-20");
    assert_eq!(s["gtid_current_pos"], "1-1-45,2-1-20");
    let c = wait_connection(&replica, "m1", "caught up", |c| c["lag"]["1"]["transactions"] == 0);
    assert_eq!(c["io_state"], "connected");
    assert_eq!(c["heartbeat_ms"], 1000, "the default heartbeat interval, reported so a repoint can keep it");
    assert_eq!(c["lag"]["2"]["seconds"], 0.0);
    assert_eq!(c["transactions_applied"], 65);
    let (_, replicas) = master.get("/v1/replicas");
    assert_eq!(replicas["replicas"][0]["server_id"], 2);
    assert_eq!(replicas["replicas"][0]["sent_position"], "1-1-45,2-1-20");
    // The replica tells its master where it can be reached, for topology discovery.
    assert_eq!(replicas["replicas"][0]["listen"], replica.listen.as_str());
    assert_eq!(replicas["replicas"][0]["admin"], replica.admin.as_str());
    assert_eq!(replica.status()["admin"], replica.admin.as_str());
}

/// A wait for a position counts what a replica passed over: with domain 2 filtered out, the replica never logs
/// nor applies domain 2, yet its gtid_slave_pos holds domain 2's GTIDs, and a wait for the master's position
/// (what a switchover's catch-up waits for) returns reached — as MASTER_GTID_WAIT does on MariaDB.
#[test]
fn a_wait_for_a_position_is_reached_through_transactions_a_filter_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    let (code, body) = change_master(&replica, "m", json!({"master": master.listen, "ignore_domain_ids": [2]}));
    assert_eq!(code, 200, "{body}");
    let (code, body) = start(&replica, "m", json!({}));
    assert_eq!(code, 200, "{body}");
    // The waits begin before the writes: woken by what the filter passes over, not only by commits.
    let target = "1-1-3,2-1-4";
    let waiter = {
        let replica_admin = replica.admin.clone();
        std::thread::spawn(move || {
            reqwest::blocking::Client::new()
                .post(format!("http://{replica_admin}/v1/wait-for-position"))
                .bearer_auth(TOKEN)
                .json(&json!({"position": target, "timeout_ms": 30_000}))
                .send()
                .and_then(|r| r.json::<Value>())
                .unwrap()
        })
    };
    write(&master, 1, 3);
    write(&master, 2, 4);
    let waited = waiter.join().unwrap();
    assert_eq!(waited["reached"], true, "{waited}\n{}", replica.log());
    assert_eq!(waited["position"], target);
    converge(&replica, &master);
    let s = replica.status();
    assert_eq!(s["gtid_binlog_pos"], "1-1-3", "domain 2 is neither applied nor logged");
    assert_eq!(s["gtid_slave_pos"], "1-1-3,2-1-4");
}

#[test]
fn a_restarted_replica_resumes_from_its_crash_safe_position() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let mut replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    write(&master, 0, 40);
    replicate(&replica, "m1", &master);
    converge(&replica, &master);
    replica.sigkill();
    write(&master, 0, 25);
    replica.restart();
    // The connection was running: it starts again by itself, from gtid_slave_pos.
    converge(&replica, &master);
    assert_eq!(checksums(&replica), checksums(&master));
    assert_eq!(replica.status()["gtid_slave_pos"], "0-1-65");
}

/// A gtid_slave_pos set too high by CHANGE MASTER, then lowered again (an operator's mistake, corrected): the
/// transactions after the lower position are applied — strict mode compares what arrives with the binlog, as
/// MariaDB does, not with a position once set — also after a restart; the replica, promoted, hands out seq_nos
/// above anything it was told about.
#[test]
fn a_slave_pos_set_too_high_and_lowered_again_replicates_what_follows() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let mut replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    write(&master, 0, 3);
    let (code, body) = change_master(&replica, "m", json!({"master": master.listen, "position": "0-1-50"}));
    assert_eq!(code, 200, "{body}");
    let (code, body) = start(&replica, "m", json!({}));
    assert_eq!(code, 200, "{body}");
    wait_connection(&replica, "m", "an IO error: the master has no 0-1-50", |c| c["io_state"] == "error");
    let (code, body) = replica.post("/v1/replication/m/stop", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let (code, body) = change_master(&replica, "m", json!({"master": master.listen, "position": "0-1-1"}));
    assert_eq!(code, 200, "{body}");
    let (code, body) = start(&replica, "m", json!({}));
    assert_eq!(code, 200, "{body}");
    converge(&replica, &master);
    assert_eq!(replica.status()["gtid_slave_pos"], "0-1-3");
    replica.stop();
    replica.restart();
    // New rows (the replica never applied 0-1-1, whose row the master's later updates of table t would expect).
    let mut c = master.client();
    rt().block_on(async {
        for key in ["x", "y"] {
            c.transact(Txn::new().domain(0).increment("u", key, "n", 1)).await.unwrap();
        }
    });
    converge(&replica, &master);
    assert_eq!(connection(&replica, "m")["last_error"], Value::Null);
    assert_eq!(checksums(&replica)["u"], checksums(&master)["u"]);
    // Promoted, it hands out seq_nos above what it applied.
    let (code, body) = replica.post("/v1/replication/m/stop", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let (code, body) = replica.post("/v1/read-only", json!({"read_only": false}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    write(&replica, 0, 1);
    assert_eq!(replica.status()["gtid_binlog_pos"], "0-2-6");
}

#[test]
fn replicas_reconnect_by_themselves_after_the_master_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    write(&master, 0, 10);
    replicate(&replica, "m1", &master);
    converge(&replica, &master);
    // Same port after the restart, so the replica's settings stay right.
    let port = master.listen.clone();
    master.stop();
    let mut again = NodeProc::start_at(&dir.path().join("m"), 1, &port, &[]);
    write(&again, 0, 10);
    converge(&replica, &again);
    assert_eq!(checksums(&replica), checksums(&again));
    assert!(connection(&replica, "m1")["reconnects"].as_u64().unwrap() >= 1);
    again.stop();
}

#[test]
fn a_replica_ahead_of_its_master_gets_an_io_error_naming_domain_and_gtids() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    write(&master, 0, 3);
    let (code, body) = change_master(&replica, "m1", json!({"master": master.listen, "position": "0-1-9"}));
    assert_eq!(code, 200, "{body}");
    let before = checksums(&replica);
    start(&replica, "m1", json!({}));
    let c = wait_connection(&replica, "m1", "an IO error", |c| c["io_state"] == "error");
    let err = &c["last_error"];
    assert_eq!(err["side"], "io");
    assert_eq!(err["code"], "REPLICA_AHEAD");
    let msg = err["message"].as_str().unwrap();
    assert!(msg.contains("domain 0") && msg.contains("0-1-9") && msg.contains("0-1-3"), "{msg}");
    assert_eq!(checksums(&replica), before, "nothing was applied");
    assert_eq!(c["running"], false);
}

#[test]
fn a_diverged_replica_gets_an_io_error_naming_both_gtids() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    write(&master, 0, 5);
    change_master(&replica, "m1", json!({"master": master.listen, "position": "0-7-3"}));
    start(&replica, "m1", json!({}));
    let c = wait_connection(&replica, "m1", "an IO error", |c| c["io_state"] == "error");
    assert_eq!(c["last_error"]["code"], "DIVERGED");
    let msg = c["last_error"]["message"].as_str().unwrap();
    assert!(msg.contains("0-7-3") && msg.contains("0-1-3"), "{msg}");
    assert_eq!(replica.status()["gtid_binlog_pos"], "");
}

#[test]
fn asking_for_purged_binlogs_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    write(&master, 0, 5);
    master.post("/v1/binlog/flush", json!({}), Some(TOKEN));
    write(&master, 0, 5);
    master.post("/v1/binlog/flush", json!({}), Some(TOKEN));
    let (code, body) = master.post("/v1/binlog/purge", json!({"before": "ferry-bin.000003"}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    replicate(&replica, "m1", &master);
    let c = wait_connection(&replica, "m1", "an IO error", |c| c["io_state"] == "error");
    assert_eq!(c["last_error"]["code"], "POSITION_PURGED");
    let msg = c["last_error"]["message"].as_str().unwrap();
    assert!(msg.contains("domain 0") && msg.contains("0-1-10") && msg.contains("purged"), "{msg}");
    assert_eq!(checksums(&replica), json!({}));
}

#[test]
fn a_strict_mode_violation_stops_the_sql_side_naming_the_gtids() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    // Both were written in domain 0: the replica's own 0-2-1..3 collide with the master's 0-1-1..
    write(&replica, 0, 3);
    write(&master, 0, 2);
    replicate(&replica, "m1", &master);
    let c = wait_connection(&replica, "m1", "an SQL error", |c| c["sql_state"] == "error");
    let err = &c["last_error"];
    assert_eq!(err["side"], "sql");
    assert_eq!(err["code"], "TWO_MASTERS");
    let msg = err["message"].as_str().unwrap();
    assert!(msg.contains("0-1-1") && msg.contains("0-2-3"), "{msg}");
    assert_eq!(replica.status()["gtid_binlog_pos"], "0-2-3", "nothing was applied");
}

#[test]
fn a_corrupt_relay_event_stops_the_sql_side_naming_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    write(&master, 0, 1);
    // The SQL side paused: both transactions sit unread in the relay log until it resumes, however slow the
    // machine is.
    change_master(&replica, "m1", json!({"master": master.listen}));
    start(&replica, "m1", json!({"sql_paused": true}));
    wait_connection(&replica, "m1", "the first transaction received", |c| c["transactions_received"] == 1);
    let relay = replica.dir.join("data/relay/m1/relay.000001");
    let second = std::fs::metadata(&relay).unwrap().len();
    write(&master, 0, 1);
    wait_connection(&replica, "m1", "the second transaction received", |c| c["transactions_received"] == 2);
    let mut bytes = std::fs::read(&relay).unwrap();
    bytes[second as usize + 9] ^= 0x55;
    std::fs::write(&relay, bytes).unwrap();
    let (code, body) = replica.post("/v1/replication/m1/resume-sql", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let c = wait_connection(&replica, "m1", "an SQL error", |c| c["sql_state"] == "error");
    assert_eq!(c["last_error"]["code"], "RELAY_CORRUPT");
    let msg = c["last_error"]["message"].as_str().unwrap();
    assert!(msg.contains("relay.000001") && msg.contains(&format!("offset {second}")), "{msg}");
    assert_eq!(replica.status()["gtid_slave_pos"], "0-1-1", "the first was applied, the corrupt one not");
}

#[test]
fn a_delayed_replica_applies_each_transaction_only_after_its_delay() {
    // Long enough that the held state is seen before the delay ends, however loaded the machine.
    const DELAY_S: u64 = 10;
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    change_master(&replica, "m1", json!({"master": master.listen, "delay_s": DELAY_S}));
    start(&replica, "m1", json!({}));
    let mut c = master.client();
    let commit = rt().block_on(c.increment("t", "k", "n", 1)).unwrap();
    let c1 = wait_connection(&replica, "m1", "the transaction received", |c| c["transactions_received"] == 1);
    assert_eq!(c1["delay_s"], DELAY_S);
    // Received, held back while its delay runs.
    let held = wait_connection(&replica, "m1", "the delay shown", |c| c["sql_state"] == "delaying");
    assert_eq!(held["transactions_applied"], 0);
    converge(&replica, &master);
    let now_us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64;
    assert!(now_us >= commit.commit_ts_us + DELAY_S * 1_000_000, "applied before its delay was over");
}

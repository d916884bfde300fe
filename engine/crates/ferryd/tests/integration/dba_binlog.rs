//! The DBA's binlog controls on a real node: SHOW BINLOG EVENTS by file and offset, FLUSH BINARY LOGS
//! DELETE_DOMAIN_ID, binlog expiry and the purge guard that keeps what connected replicas read, RESET MASTER.

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::Txn;
use serde_json::{json, Value};

fn write(node: &NodeProc, domain: u32, n: usize) {
    let mut c = node.client();
    rt().block_on(async {
        for i in 0..n {
            c.transact(Txn::new().domain(domain).increment("t", &format!("k{i}"), "n", 1)).await.unwrap();
        }
    });
}

fn events(node: &NodeProc, file: &str, query: &str) -> (u16, Value) {
    node.get(&format!("/v1/binlog/files/{file}/events?{query}"))
}

#[test]
fn show_binlog_events_lists_a_file_by_offset_and_pages_by_end_log_pos() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 3, &[]);
    write(&node, 0, 2);
    let (code, body) = node.post("/v1/binlog/flush", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    write(&node, 4, 1);

    let (code, body) = events(&node, "ferry-bin.000001", "limit=1000");
    assert_eq!(code, 200, "{body}");
    let rows = body["events"].as_array().unwrap().clone();
    let types: Vec<&str> = rows.iter().map(|r| r["event_type"].as_str().unwrap()).collect();
    assert_eq!(types[..2], ["format_description", "gtid_list"]);
    assert_eq!(*types.last().unwrap(), "rotate", "the closed file ends with its rotate event");
    let gtids: Vec<&str> =
        rows.iter().filter(|r| r["event_type"] == "gtid").map(|r| r["info"].as_str().unwrap()).collect();
    assert_eq!(gtids.len(), 2);
    assert!(gtids[0].starts_with("BEGIN GTID 0-3-1 cid="), "{gtids:?}");
    assert_eq!(rows[0]["log_name"], "ferry-bin.000001");
    assert_eq!(rows[0]["pos"], 4);
    assert_eq!(rows[0]["server_id"], 3);
    assert_eq!(body["next_from"], Value::Null, "the whole file fit in the page");

    // Page by End_log_pos, three events at a time: the pages put together are the whole listing.
    let mut paged = Vec::new();
    let mut query = "limit=3".to_string();
    loop {
        let (code, page) = events(&node, "ferry-bin.000001", &query);
        assert_eq!(code, 200, "{page}");
        paged.extend(page["events"].as_array().unwrap().iter().cloned());
        match page["next_from"].as_u64() {
            Some(next) => query = format!("from={next}&limit=3"),
            None => break,
        }
    }
    assert_eq!(paged, rows);
    // LIMIT skip, n.
    let (_, page) = events(&node, "ferry-bin.000001", "skip=2&limit=1");
    assert_eq!(page["events"][0], rows[2]);

    // The file being written lists what is complete in it.
    let (code, body) = events(&node, "ferry-bin.000002", "");
    assert_eq!(code, 200, "{body}");
    let current = body["events"].as_array().unwrap();
    assert_eq!(current[1]["info"], "[0-3-2]", "its GTID list");
    assert!(current.iter().any(|r| r["event_type"] == "gtid" && r["gtid"] == "4-3-1"), "{body}");
}

#[test]
fn show_binlog_events_refuses_a_bad_file_or_an_offset_inside_an_event() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    write(&node, 0, 1);
    let (_, body) = events(&node, "ferry-bin.000001", "");
    let gtid_event = body["events"].as_array().unwrap().iter().find(|r| r["event_type"] == "gtid").unwrap().clone();
    let inside = gtid_event["pos"].as_u64().unwrap() + 1;

    let (code, body) = events(&node, "ferry-bin.000001", &format!("from={inside}"));
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["error"]["code"], "bad_offset");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("not at an event boundary") && message.contains(&gtid_event["pos"].to_string()),
        "{message}"
    );

    let (code, body) = events(&node, "ferry-bin.000001", "from=99999999");
    assert_eq!((code, body["error"]["code"].as_str()), (400, Some("bad_offset")), "{body}");
    let (code, body) = events(&node, "ferry-bin.000009", "");
    assert_eq!((code, body["error"]["code"].as_str()), (404, Some("no_such_binlog")), "{body}");
    let (code, body) = events(&node, "..%2Fstore.redb", "");
    assert_eq!(code, 404, "{body}");
    let (code, _) = events(&node, "ferry-bin.000001", "limit=0");
    assert_eq!(code, 400);
    let (code, _) = events(&node, "ferry-bin.000001", "from=-1");
    assert_eq!(code, 400);
}

/// `skip` is bounded at 1,000,000 events: up to it a listing is served (here past the file's end: no rows),
/// beyond it the call is a 400 naming the bound and the way to page further.
#[test]
fn show_binlog_events_bounds_skip_and_names_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    write(&node, 0, 1);
    let (code, body) = events(&node, "ferry-bin.000001", "skip=1000000");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["events"], json!([]));
    assert_eq!(body["next_from"], Value::Null);
    let (code, body) = events(&node, "ferry-bin.000001", "skip=1000001");
    assert_eq!((code, body["error"]["code"].as_str()), (400, Some("bad_request")), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("1000000") && message.contains("from="), "{message}");
    let (code, _) = events(&node, "ferry-bin.000001", "skip=99999999999999999999999");
    assert_eq!(code, 400, "a skip beyond any integer is refused too");
}

#[test]
fn delete_domain_id_is_refused_while_a_file_holds_the_domain_and_done_once_it_is_purged() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProc::start(dir.path(), 1, &[]);
    write(&node, 0, 2);
    write(&node, 1, 3);
    let flush = |node: &NodeProc, domains: Value| {
        node.post("/v1/binlog/flush", json!({"delete_domain_ids": domains}), Some(TOKEN))
    };

    let (code, body) = flush(&node, json!("1"));
    assert_eq!((code, body["error"]["code"].as_str()), (400, Some("bad_request")), "a malformed list: {body}");
    // ferry-bin.000001 holds domain 1's transactions: refused, and nothing changes (no rotation either).
    let (code, body) = flush(&node, json!([1]));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("domain_in_binlog")), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("domain 1") && message.contains("ferry-bin.000001") && message.contains("purge"),
        "{message}"
    );
    let s = node.status();
    assert_eq!(s["gtid_binlog_state"], "0-1-2,1-1-3");
    assert_eq!(s["binlog_files"].as_array().unwrap().len(), 1, "no rotation on a refusal");

    // Rotate, then purge the file that holds domain 1: now nothing present holds it.
    let (code, body) = node.post("/v1/binlog/flush", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    write(&node, 0, 1);
    let (code, body) = flush(&node, json!([1, 0]));
    assert_eq!(code, 409, "domain 0 was written in the present files: all or nothing: {body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("domain 0"), "{body}");
    let (code, body) = node.post("/v1/binlog/purge", json!({"before": "ferry-bin.000002"}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let (code, body) = flush(&node, json!([1, 9]));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["deleted_domain_ids"], json!([1]));
    assert_eq!(body["not_present"], json!([9]), "an unknown domain is reported, as MariaDB warns");
    assert_eq!(body["file"], "ferry-bin.000003");
    let s = node.status();
    assert_eq!(s["gtid_binlog_state"], "0-1-3");
    assert_eq!(s["gtid_binlog_pos"], "0-1-3");
    let (_, listing) = node.get("/v1/binlog/files/ferry-bin.000003/events");
    assert_eq!(listing["events"][1]["info"], "[0-1-3]", "the new file's GTID list leaves the domain out");

    // It stays deleted across a restart, and its seq_nos are never handed out again.
    node.stop();
    node.restart();
    assert_eq!(node.status()["gtid_binlog_state"], "0-1-3");
    write(&node, 1, 1);
    assert_eq!(node.status()["gtid_binlog_pos"], "0-1-3,1-1-4");
}

fn file_names(node: &NodeProc) -> Vec<String> {
    node.status()["binlog_files"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap().to_string()).collect()
}

/// Polls the node's status until `check` holds (bounded by 30 s).
fn wait_status(node: &NodeProc, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    node.eventually(what, || node.status(), check)
}

/// Starts a replica of `master` and waits until it has applied the master's binlog: its stream then reads the
/// master's current file, and stays in it until the master commits again (a rotation alone does not move it).
fn caught_up_replica(dir: &std::path::Path, master: &NodeProc) -> NodeProc {
    let replica = NodeProc::start(dir, 2, &["--read-only"]);
    let (code, body) = replica.post("/v1/replication/m/change-master", json!({"master": master.listen}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let (code, body) = replica.post("/v1/replication/m/start", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let target = master.status()["gtid_binlog_pos"].as_str().unwrap().to_string();
    let (_, body) =
        replica.post("/v1/wait-for-position", json!({"position": target, "timeout_ms": 30_000}), Some(TOKEN));
    assert_eq!(body["reached"], true, "{body}");
    wait_status(master, "a connected replica", |s| s["replicas"].as_array().is_some_and(|r| r.len() == 1));
    replica
}

#[test]
fn purge_refuses_files_a_connected_replica_still_reads_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    write(&master, 0, 2);
    let _replica = caught_up_replica(&dir.path().join("r"), &master);
    for _ in 0..2 {
        assert_eq!(master.post("/v1/binlog/flush", json!({}), Some(TOKEN)).0, 200);
    }
    assert_eq!(master.status()["replicas"][0]["reading_file"], "ferry-bin.000001");
    let (code, body) = master.post("/v1/binlog/purge", json!({"before": "ferry-bin.000003"}), Some(TOKEN));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("in_use_by_replica")), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("ferry-bin.000001") && message.contains("server_id 2"), "{message}");
    assert_eq!(file_names(&master).len(), 3, "nothing was purged");

    // Once the replica's stream has moved on, the same purge goes through.
    write(&master, 0, 1);
    wait_status(&master, "the replica reading the newest file", |s| {
        s["replicas"][0]["reading_file"] == "ferry-bin.000003"
    });
    let (code, body) = master.post("/v1/binlog/purge", json!({"before": "ferry-bin.000003"}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["purged"], json!(["ferry-bin.000001", "ferry-bin.000002"]));
}

#[test]
fn expiry_by_size_never_removes_what_a_connected_replica_reads_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // Every closed file is over the total size: expiry wants all of them gone.
    let master = NodeProc::start(&dir.path().join("m"), 1, &["--binlog-total-bytes-max", "1"]);
    write(&master, 0, 1);
    let _replica = caught_up_replica(&dir.path().join("r"), &master);
    for _ in 0..2 {
        assert_eq!(master.post("/v1/binlog/flush", json!({}), Some(TOKEN)).0, 200);
    }
    // ferry-bin.000001 is due, but the replica's stream still reads it: held back, and said so.
    let s = wait_status(&master, "expiry held back", |s| !s["binlog_expiry"]["held_back"].is_null());
    let held = &s["binlog_expiry"]["held_back"];
    assert_eq!(held["file"], "ferry-bin.000001", "{s}");
    assert!(held["replica"].as_str().unwrap().contains("server_id 2"), "{s}");
    assert_eq!(s["binlog_expiry"]["total_bytes_max"], 1);
    assert_eq!(s["binlog_expiry"]["files_expired"], 0);
    assert_eq!(file_names(&master), ["ferry-bin.000001", "ferry-bin.000002", "ferry-bin.000003"]);
    let metrics = master.get_text("/metrics");
    assert!(metrics.contains("ferry_binlog_expiry_held_back 1"), "{metrics}");
    assert!(master.log().contains("binlog expiry held back"), "a log line names the replica");

    // The replica moves on: the files go, and nothing is held back any more.
    write(&master, 0, 1);
    let s = wait_status(&master, "the old files expired", |s| {
        s["binlog_files"].as_array().unwrap().len() == 1 && s["binlog_expiry"]["held_back"].is_null()
    });
    assert_eq!(s["binlog_files"][0]["name"], "ferry-bin.000003");
    assert_eq!(s["binlog_expiry"]["files_expired"], 2);
    assert_eq!(s["binlog_expiry"]["last_expired"], json!(["ferry-bin.000001", "ferry-bin.000002"]));
    assert!(master.get_text("/metrics").contains("ferry_binlog_expiry_held_back 0"));
}

#[test]
fn expiry_by_age_removes_closed_files_once_they_are_old_enough() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(dir.path(), 1, &["--binlog-expire-logs-seconds", "1"]);
    write(&master, 0, 1);
    assert_eq!(master.post("/v1/binlog/flush", json!({}), Some(TOKEN)).0, 200);
    assert_eq!(master.status()["binlog_expiry"]["expire_logs_seconds"], 1);
    let s = wait_status(&master, "the closed file aged out", |s| s["binlog_expiry"]["files_expired"] == 1);
    assert_eq!(file_names(&master), ["ferry-bin.000002"], "{s}");
    assert_eq!(s["gtid_binlog_state"], "0-1-1", "the state is kept in the next file's GTID list");
}

fn read_n(node: &NodeProc, key: &str) -> Option<Value> {
    let mut c = node.client();
    rt().block_on(c.get("t", key)).unwrap().map(|row| serde_json::to_value(&row["n"]).unwrap())
}

#[test]
fn reset_master_is_refused_with_replicas_or_writes_and_then_starts_the_binlog_again_keeping_seq_nos() {
    let dir = tempfile::tempdir().unwrap();
    let mut master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    write(&master, 0, 3);
    assert_eq!(master.post("/v1/binlog/flush", json!({}), Some(TOKEN)).0, 200);
    write(&master, 0, 1);
    let replica = caught_up_replica(&dir.path().join("r"), &master);
    let reset = |node: &NodeProc, body: Value| node.post("/v1/binlog/reset", body, Some(TOKEN));

    let (code, body) = reset(&master, json!({}));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("replicas_connected")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("server_id 2"), "{body}");
    assert_eq!(replica.post("/v1/replication/m/stop", json!({}), Some(TOKEN)).0, 200);
    wait_status(&master, "no replica connected", |s| s["replicas"].as_array().is_some_and(|r| r.is_empty()));
    let (code, body) = reset(&master, json!({}));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("writable")), "{body}");
    assert_eq!(reset(&master, json!({"to": 0})).0, 400);
    assert_eq!(master.post("/v1/binlog/reset", json!({}), None).0, 401);
    let s = master.status();
    assert_eq!(s["binlog_files"].as_array().unwrap().len(), 2, "refusals change nothing");
    assert_eq!(s["gtid_binlog_state"], "0-1-4");

    assert_eq!(master.post("/v1/read-only", json!({"read_only": true}), Some(TOKEN)).0, 200);
    let (code, body) = reset(&master, json!({"to": 5}));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["deleted"], json!(["ferry-bin.000001", "ferry-bin.000002"]));
    assert_eq!(body["file"], "ferry-bin.000005");
    assert_eq!(body["gtid_binlog_state"], "");
    let s = master.status();
    assert_eq!(file_names(&master), ["ferry-bin.000005"]);
    assert_eq!((s["gtid_binlog_pos"].as_str(), s["gtid_current_pos"].as_str()), (Some(""), Some("")), "{s}");
    assert_eq!(read_n(&master, "k0"), Some(json!(2)), "the data stays");
    let (_, listing) = master.get("/v1/binlog/files/ferry-bin.000005/events");
    assert_eq!(listing["events"][1]["info"], "[]", "the new first file's GTID list is empty");

    // The seq_nos are kept: the next GTID continues above the old ones, also after a restart.
    assert_eq!(master.post("/v1/read-only", json!({"read_only": false}), Some(TOKEN)).0, 200);
    write(&master, 0, 1);
    assert_eq!(master.status()["gtid_binlog_state"], "0-1-5");
    master.stop();
    master.restart();
    assert_eq!(master.status()["gtid_binlog_state"], "0-1-5");
    assert_eq!(read_n(&master, "k0"), Some(json!(3)), "nothing replayed twice");
    write(&master, 0, 1);
    assert_eq!(master.status()["gtid_binlog_pos"], "0-1-6");
}

#[test]
fn reset_master_with_force_and_reuse_seq_nos_numbers_from_the_start_as_mariadb_does() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    write(&node, 0, 2);
    let (code, body) = node.post("/v1/binlog/reset", json!({"force": true, "reuse_seq_nos": true}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["reuse_seq_nos"], true);
    write(&node, 0, 1);
    assert_eq!(node.status()["gtid_binlog_pos"], "0-1-1", "GTIDs handed out again, by explicit choice");
}

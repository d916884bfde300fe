//! The DBA's binlog controls on a real node: SHOW BINLOG EVENTS by file and offset, FLUSH BINARY LOGS
//! DELETE_DOMAIN_ID.

mod common;

use common::{rt, NodeProc, TOKEN};
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

#[test]
fn delete_domain_id_is_refused_while_a_file_holds_the_domain_and_done_once_it_is_purged() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProc::start(dir.path(), 1, &[]);
    write(&node, 0, 2);
    write(&node, 1, 3);
    let flush = |node: &NodeProc, domains: Value| {
        node.post("/v1/binlog/flush", json!({"delete_domain_ids": domains}), Some(TOKEN))
    };

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

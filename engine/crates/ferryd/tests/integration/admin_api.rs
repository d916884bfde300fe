//! The admin HTTP API of a real node: status, authentication of every route but the liveness check, read-only,
//! flush and purge, recent events, checksums and metrics, and optional bodies left out.

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::Txn;
use serde_json::json;

#[test]
fn status_reports_ids_positions_files_and_counters() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 4, &["--domain-id", "2"]);
    let mut c = node.client();
    rt().block_on(async {
        c.increment("t", "a", "n", 1).await.unwrap();
        c.transact(Txn::new().domain(5).increment("t", "b", "n", 1)).await.unwrap();
    });
    let s = node.status();
    assert_eq!(s["server_id"], 4);
    assert_eq!(s["default_domain"], 2);
    assert_eq!(s["read_only"], false);
    assert_eq!(s["gtid_binlog_pos"], "2-4-1,5-4-1");
    assert_eq!(s["gtid_binlog_state"], "2-4-1,5-4-1");
    assert_eq!(s["binlog_files"][0]["name"], "ferry-bin.000001");
    assert_eq!(s["counters"]["commits"], 2);
    assert!(s["counters"]["groups"].as_u64().unwrap() >= 1);
}

#[test]
fn mutating_calls_without_the_right_token_get_401_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    for token in [None, Some("not-the-token-at-all")] {
        let (code, body) = node.post("/v1/read-only", json!({"read_only": true}), token);
        assert_eq!(code, 401);
        assert_eq!(body["error"]["code"], "unauthorized");
        assert_eq!(node.post("/v1/binlog/flush", json!({}), token).0, 401);
        assert_eq!(node.post("/v1/binlog/purge", json!({"before": "ferry-bin.000001"}), token).0, 401);
    }
    let s = node.status();
    assert_eq!(s["read_only"], false);
    assert_eq!(s["binlog_files"].as_array().unwrap().len(), 1);
}

/// Reads need the token too: without it, or with a wrong one, every route but `GET /v1/health` answers 401
/// `unauthorized` with `WWW-Authenticate: Bearer`; with it, the route answers.
#[test]
fn every_route_but_health_needs_the_token_reads_included() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let reads = [
        "/v1/status",
        "/v1/replication",
        "/v1/replicas",
        "/v1/binlog/events",
        "/v1/binlog/files/ferry-bin.000001/events",
        "/v1/checksums",
        "/metrics",
    ];
    for path in reads {
        for token in [None, Some("not-the-token-at-all")] {
            let answer = node.get_as(path, token);
            assert_eq!(answer.status, 401, "{path} with {token:?}");
            assert_eq!(answer.body["error"]["code"], "unauthorized", "{path}: {}", answer.body);
            assert_eq!(answer.www_authenticate.as_deref(), Some("Bearer"), "{path}");
        }
        assert_eq!(node.get_as(path, Some(TOKEN)).status, 200, "{path}");
    }
    let wait = json!({"position": "", "timeout_ms": 0});
    assert_eq!(node.post("/v1/wait-for-position", wait.clone(), None).0, 401);
    assert_eq!(node.post("/v1/wait-for-position", wait, Some(TOKEN)).0, 200);
}

/// The liveness check needs no token and tells nothing about the node.
#[test]
fn health_answers_ok_to_anyone_and_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    for token in [None, Some("not-the-token-at-all"), Some(TOKEN)] {
        let answer = node.get_as("/v1/health", token);
        assert_eq!((answer.status, answer.body), (200, json!({"ok": true})), "{token:?}");
    }
}

#[test]
fn a_node_without_a_token_file_refuses_everything_but_health_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start_without_token(dir.path(), 1, &[]);
    assert_eq!(node.get_as("/v1/health", None).status, 200);
    for path in ["/v1/status", "/v1/checksums", "/metrics"] {
        let answer = node.get_as(path, Some(TOKEN));
        assert_eq!(answer.status, 401, "{path}");
        let message = answer.body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("--admin-token-file") && message.contains("/v1/health"), "{path}: {message}");
    }
    assert_eq!(node.post("/v1/read-only", json!({"read_only": true}), Some(TOKEN)).0, 401);
}

#[test]
fn bad_payloads_get_400_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let (code, body) = node.post("/v1/read-only", json!({"read_only": "yes"}), Some(TOKEN));
    assert_eq!(code, 400);
    assert!(body["error"]["message"].as_str().unwrap().contains("read_only"), "{body}");
    let (code, body) = node.post("/v1/binlog/purge", json!({"before": "ferry-bin.999999"}), Some(TOKEN));
    assert_eq!(code, 400);
    assert!(body["error"]["message"].as_str().unwrap().contains("not a binlog file"), "{body}");
    let (code, _) = node.get("/v1/binlog/events?limit=0");
    assert_eq!(code, 400);
    let (code, _) = node.get("/v1/binlog/events?domain=x");
    assert_eq!(code, 400);
    assert_eq!(node.get("/v1/nope").0, 404);
}

#[test]
fn flush_rotates_and_purge_removes_old_files() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let mut c = node.client();
    for _ in 0..3 {
        rt().block_on(c.increment("t", "k", "n", 1)).unwrap();
        let (code, body) = node.post("/v1/binlog/flush", json!({}), Some(TOKEN));
        assert_eq!(code, 200, "{body}");
    }
    let names: Vec<String> = node.status()["binlog_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["ferry-bin.000001", "ferry-bin.000002", "ferry-bin.000003", "ferry-bin.000004"]);
    let (code, body) = node.post("/v1/binlog/purge", json!({"before": "ferry-bin.000003"}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["purged"], json!(["ferry-bin.000001", "ferry-bin.000002"]));
    assert_eq!(node.status()["binlog_files"].as_array().unwrap().len(), 2);
    assert!(!node.binlog_dir().join("ferry-bin.000001").exists());
}

#[test]
fn recent_events_page_newest_first_and_filter_by_domain() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let mut c = node.client();
    rt().block_on(async {
        for i in 0..10u32 {
            c.transact(Txn::new().domain(i % 2).increment("t", "k", "n", 1)).await.unwrap();
        }
    });
    let (_, page) = node.get("/v1/binlog/events?limit=4");
    let gtids: Vec<&str> = page["events"].as_array().unwrap().iter().map(|e| e["gtid"].as_str().unwrap()).collect();
    assert_eq!(gtids, ["1-1-5", "0-1-5", "1-1-4", "0-1-4"]);
    let next = page["next_before"].as_u64().unwrap();
    let (_, page2) = node.get(&format!("/v1/binlog/events?limit=4&before={next}"));
    assert_eq!(page2["events"][0]["gtid"], "1-1-3");
    let (_, only1) = node.get("/v1/binlog/events?domain=1&limit=100");
    let events = only1["events"].as_array().unwrap();
    assert_eq!(events.len(), 5);
    assert!(events.iter().all(|e| e["domain"] == 1));
    assert_eq!(events[0]["tables"], json!(["t"]));
    assert_eq!(only1["next_before"], serde_json::Value::Null);
}

#[test]
fn checksums_carry_their_position_and_metrics_count_commits() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let mut c = node.client();
    rt().block_on(async {
        for i in 0..5 {
            c.increment("accounts", &format!("a{i}"), "n", 1).await.unwrap();
        }
    });
    let (code, sums) = node.get("/v1/checksums");
    assert_eq!(code, 200);
    assert_eq!(sums["position"], "0-1-5");
    assert_eq!(sums["tables"]["accounts"]["rows"], 5);
    let metrics = node.get_text("/metrics");
    assert!(metrics.contains("ferry_commits_total 5"), "{metrics}");
    assert!(metrics.contains("ferry_commit_group_size_bucket"), "{metrics}");
    assert!(metrics.contains("ferry_binlog_fsync_seconds_count"), "{metrics}");
    assert!(metrics.contains("ferry_gtid_binlog_seq{domain=\"0\"} 5"), "{metrics}");
}

/// An optional body may be left out whatever the content type says (`curl -X POST`, a client that sends a form
/// type with an empty body); a body that is there must be JSON of the right shape, else a JSON 400.
#[test]
fn an_empty_optional_body_is_no_options_whatever_its_content_type() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let flush = |content_type: Option<&str>, body: &'static str| {
        let mut request = reqwest::blocking::Client::new()
            .post(format!("http://{}/v1/binlog/flush", node.admin))
            .bearer_auth(TOKEN)
            .body(body);
        if let Some(t) = content_type {
            request = request.header("content-type", t);
        }
        let response = request.send().unwrap();
        (response.status().as_u16(), response.json::<serde_json::Value>().unwrap())
    };
    for (content_type, body) in [(None, ""), (Some("application/x-www-form-urlencoded"), ""), (Some("text/plain"), " ")]
    {
        let (code, answer) = flush(content_type, body);
        assert_eq!(code, 200, "{content_type:?} {body:?}: {answer}");
        assert!(answer["file"].as_str().is_some_and(|f| f.starts_with("ferry-bin.")), "{answer}");
    }
    let (code, answer) = flush(Some("application/json"), "{not json");
    assert_eq!((code, answer["error"]["code"].as_str()), (400, Some("bad_request")), "{answer}");
    let (code, answer) = flush(None, r#"{"delete_domain_ids": "7"}"#);
    assert_eq!((code, answer["error"]["code"].as_str()), (400, Some("bad_request")), "{answer}");
}

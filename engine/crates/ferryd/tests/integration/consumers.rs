//! Change consumers on real nodes: a consumer's token subscribes and reads and can do nothing else (no writes,
//! no dumps, no admin calls) while the fleet's admin token keeps serving replicas; a consumer is listed apart
//! from replicas and never counted for semi-sync; following the master across two switchovers done through
//! the admin API while a writer runs, it receives every transaction exactly once in each domain's order, also
//! when it restarts from its stored position; and one that stops reading is cut off at its byte bound without
//! a client commit under semi-sync waiting for it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{
    self, eventually, post_ok, replicate_with as replicate, rt, start_with_consumers as start, NodeProc, Received,
    CONSUMER_TOKEN, EVENTUALLY, TOKEN,
};
use ferry_client::{Client, ClientError, ErrorCode, FollowOptions, SubscribeOptions, Subscription, Txn};
use ferry_core::binlog::event::Event;
use ferry_core::gtid::{DomainId, Gtid, GtidPosition};
use ferry_core::protocol::{Request, Response};
use ferry_core::row::{Row, Value};
use serde_json::{json, Value as Json};

fn options(name: &str, start: Option<&str>) -> SubscribeOptions {
    let mut o = SubscribeOptions::new(name, CONSUMER_TOKEN);
    o.start = start.map(|p| p.parse().unwrap());
    o.heartbeat = Duration::from_millis(100);
    o
}

fn refusal<T: std::fmt::Debug>(result: Result<T, ClientError>) -> (ErrorCode, String) {
    match result {
        Err(ClientError::Server { code: Some(code), message, .. }) => (code, message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn consumers(node: &NodeProc) -> Json {
    let (code, body) = node.get("/v1/consumers");
    assert_eq!(code, 200, "{body}");
    body
}

#[test]
fn a_consumer_token_subscribes_and_reads_and_can_do_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let master = start(&dir.path().join("m"), 1, &[]);
    let replica = start(&dir.path().join("r"), 2, &["--read-only"]);
    // The fleet's admin token still serves replicas.
    replicate(&replica, "m", &master, "slave_pos");
    let mut writer = master.client();
    let last = rt().block_on(async { writer.increment("t", "k", "n", 1).await.unwrap() }).gtid;
    post_ok(&replica, "/v1/wait-for-position", json!({"position": last.to_string(), "timeout_ms": 60_000}));

    rt().block_on(async {
        let subscribe = Request::Subscribe { name: "c".into(), position: None, heartbeat_ms: 100, domains: vec![] };
        let mut c = Client::connect(&master.listen).await.unwrap();
        let (code, message) = refusal(c.call(&subscribe).await);
        assert_eq!(code, ErrorCode::PermissionDenied);
        assert!(message.contains("--consumer-token-file"), "{message}");
        let (code, message) = refusal(c.auth("not-a-token-of-this-node").await);
        assert_eq!(code, ErrorCode::PermissionDenied);
        assert!(message.contains("neither the admin token nor the consumer token"), "{message}");

        c.auth(CONSUMER_TOKEN).await.unwrap();
        assert_eq!(c.get("t", "k").await.unwrap().unwrap()["n"], Value::Int(1), "a consumer reads");
        assert!(c.role().await.unwrap().is_master());
        let (code, message) = refusal(c.increment("t", "k", "n", 1).await);
        assert_eq!(code, ErrorCode::PermissionDenied);
        assert!(message.contains("read-only"), "{message}");
        let (code, _) = refusal(c.transact(Txn::new().gtid(1, 99).increment("t", "k", "n", 1)).await);
        assert_eq!(code, ErrorCode::PermissionDenied, "no explicit GTIDs");
        let dump = Request::Dump {
            server_id: 9,
            position: String::new(),
            heartbeat_ms: 100,
            listen: String::new(),
            admin: String::new(),
        };
        let (code, message) = refusal(c.call(&dump).await);
        assert_eq!(code, ErrorCode::PermissionDenied, "a consumer is never a replica");
        assert!(message.contains("admin token"), "{message}");
        assert_eq!(c.get("t", "k").await.unwrap().unwrap()["n"], Value::Int(1), "nothing was written");
    });

    // The admin API knows only the admin token.
    for path in ["/v1/status", "/v1/consumers", "/v1/replicas", "/metrics"] {
        let answer = master.get_as(path, Some(CONSUMER_TOKEN));
        assert_eq!(answer.status, 401, "GET {path} with the consumer token: {}", answer.body);
    }
    for (path, body) in [
        ("/v1/read-only", json!({"read_only": true})),
        ("/v1/replication/x/change-master", json!({"master": replica.listen})),
        ("/v1/binlog/purge", json!({"before": "ferry-bin.000001"})),
    ] {
        let (code, resp) = master.post(path, body, Some(CONSUMER_TOKEN));
        assert_eq!(code, 401, "POST {path} with the consumer token: {resp}");
    }
    assert_eq!(master.status()["read_only"], false);

    // Listed apart: the subscription is a consumer with its position and lag, the replica a replica.
    let mut sub = rt().block_on(Subscription::open(&master.listen, &options("lister", Some("")))).unwrap();
    let first = rt().block_on(sub.next()).unwrap();
    assert_eq!(first.gtid, last);
    let listed = master.eventually(
        "the consumer listed with the position it was sent",
        || consumers(&master),
        |c| c["consumers"][0]["position"] == last.to_string(),
    );
    let consumer = &listed["consumers"][0];
    assert_eq!(consumer["name"], "lister");
    assert_eq!(consumer["lag"]["0"], json!({"transactions": 0, "seconds": 0.0}), "{consumer}");
    assert_eq!(listed["consumers"].as_array().unwrap().len(), 1);
    let (_, replicas) = master.get("/v1/replicas");
    let replicas = replicas["replicas"].as_array().unwrap().clone();
    assert_eq!(replicas.len(), 1, "{replicas:?}");
    assert_eq!(replicas[0]["server_id"], 2);
    assert_eq!(master.status()["consumers"][0]["name"], "lister");
    assert!(master.get_text("/metrics").lines().any(|l| l == "ferry_consumers 1"));

    // Bad subscriptions are refused precisely.
    rt().block_on(async {
        let (code, message) = refusal(Subscription::open(&master.listen, &options("bad name", None)).await);
        assert_eq!(code, ErrorCode::InvalidRequest);
        assert!(message.contains("' ' at byte 3"), "{message}");
        let (code, message) = refusal(Subscription::open(&master.listen, &options("c", Some("0-1-5"))).await);
        assert_eq!(code, ErrorCode::ReplicaAhead, "{message}");
        let mut o = options("c", None);
        o.token = "wrong-token-0123456789".into();
        assert_eq!(refusal(Subscription::open(&master.listen, &o).await).0, ErrorCode::PermissionDenied);
    });
    drop(sub);
    master.eventually("the consumer gone from the list", || consumers(&master), |c| c["consumers"] == json!([]));
}

#[test]
fn a_consumer_is_never_counted_for_semi_sync() {
    let dir = tempfile::tempdir().unwrap();
    let semi = ["--durability", "local+network", "--semi-sync-timeout-ms", "300"];
    let master = start(&dir.path().join("m"), 1, &semi);
    let mut sub = rt().block_on(Subscription::open(&master.listen, &options("c", None))).unwrap();
    master.eventually("the consumer subscribed", || consumers(&master), |c| c["consumers"][0]["name"] == "c");
    let mut client = master.client();
    let started = Instant::now();
    let commit = rt().block_on(client.increment("t", "k", "n", 1)).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300), "the commit waited for a replica, not the consumer");
    let s = master.status()["semi_sync"].clone();
    assert_eq!((s["replicas_connected"].as_u64(), s["timeouts"].as_u64()), (Some(0), Some(1)), "{s}");
    assert_eq!(rt().block_on(sub.next()).unwrap().gtid, commit.gtid, "the consumer still gets it");
}

/// A writer following the master among `nodes`: increments in domains 1 and 2 in turn until `stop`; returns the
/// GTIDs it was answered with. A refusal as read-only (the old master during a switchover) moves it to the
/// other node; both refusing is a switchover's window, waited out by a short pause.
async fn write_until(nodes: Vec<String>, stop: Arc<AtomicBool>) -> Vec<Gtid> {
    /// Pause of the workload when no node takes writes (the switchover's window).
    const NO_MASTER_PAUSE: Duration = Duration::from_millis(5);
    let mut acknowledged = Vec::new();
    let mut at = 0;
    let mut client = Client::connect(&nodes[at]).await.unwrap();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let domain: DomainId = 1 + (i % 2) as u32;
        let txn = Txn::new().domain(domain).increment("ledger", &format!("acct{}", i % 7), "balance", 1);
        match client.transact(txn).await {
            Ok(c) => {
                acknowledged.push(c.gtid);
                i += 1;
            }
            Err(e) if e.code() == Some(ErrorCode::ReadOnly) => {
                at = (at + 1) % nodes.len();
                client = Client::connect(&nodes[at]).await.unwrap();
                tokio::time::sleep(NO_MASTER_PAUSE).await;
            }
            Err(e) => panic!("write to {}: {e}", nodes[at]),
        }
    }
    acknowledged
}

/// Planned switchover through the admin API: the old master read-only once its commits in flight have their
/// answers, the candidate level with its position, promoted (its connection removed, writable), and the old
/// master repointed to it.
fn switchover(old: &NodeProc, new: &NodeProc, old_name: &str, new_name: &str) {
    let ro = post_ok(old, "/v1/read-only", json!({"read_only": true, "wait_for_in_flight_ms": 30_000}));
    let position = ro["gtid_binlog_pos"].as_str().unwrap().to_string();
    let reached = post_ok(new, "/v1/wait-for-position", json!({"position": position, "timeout_ms": 60_000}));
    assert_eq!(reached["reached"], true, "{reached}");
    let (code, resp) = new.delete_req(&format!("/v1/replication/{old_name}"));
    assert_eq!(code, 200, "{resp}");
    post_ok(new, "/v1/read-only", json!({"read_only": false}));
    replicate(old, new_name, new, "current_pos");
}

/// Per domain, the GTIDs of `changes` in the order received.
fn by_domain(gtids: impl IntoIterator<Item = Gtid>) -> BTreeMap<DomainId, Vec<Gtid>> {
    let mut out: BTreeMap<DomainId, Vec<Gtid>> = BTreeMap::new();
    for g in gtids {
        out.entry(g.domain).or_default().push(g);
    }
    out
}

/// Follows the master among `nodes` from `start`, recording into `into`, until `until` changes are in it.
async fn follow(nodes: Vec<String>, start: &str, name: &str, into: Arc<Mutex<Received>>, until: usize) -> GtidPosition {
    common::follow(nodes, FollowOptions::new(options(name, Some(start))), name, into, until).await
}

#[test]
fn a_consumer_gets_every_transaction_once_in_order_across_switchovers_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let a = start(&dir.path().join("a"), 1, &[]);
    let b = start(&dir.path().join("b"), 2, &["--read-only"]);
    replicate(&b, "a", &a, "slave_pos");
    let nodes = vec![a.listen.clone(), b.listen.clone()];

    let stop = Arc::new(AtomicBool::new(false));
    let writer = rt().spawn(write_until(nodes.clone(), stop.clone()));
    let whole = Arc::new(Mutex::new(Received::default()));
    let follower = rt().spawn(follow(nodes.clone(), "", "whole", whole.clone(), usize::MAX));
    // A second consumer stops after 50 transactions and resumes from the position it stored.
    let parts = Arc::new(Mutex::new(Received::default()));
    let restarting = rt().spawn({
        let (nodes, parts) = (nodes.clone(), parts.clone());
        async move {
            let stored = follow(nodes.clone(), "", "restarting", parts.clone(), 50).await;
            follow(nodes, &stored.to_string(), "restarting", parts, usize::MAX).await
        }
    });
    let received = |into: &Arc<Mutex<Received>>| into.lock().unwrap().changes.len();
    let followed = |into: &Arc<Mutex<Received>>| into.lock().unwrap().nodes.clone();

    eventually(
        "the consumers under way",
        EVENTUALLY,
        || (received(&whole), received(&parts)),
        |(w, p)| *w > 100 && *p > 100,
    );
    switchover(&a, &b, "a", "b");
    for into in [&whole, &parts] {
        eventually("following the new master", EVENTUALLY, || followed(into), |n| n.last() == Some(&b.listen));
    }
    let moved = received(&whole);
    eventually("changes from the new master", EVENTUALLY, || received(&whole), |n| *n > moved + 100);
    switchover(&b, &a, "b", "a");
    for into in [&whole, &parts] {
        eventually("following the first master again", EVENTUALLY, || followed(into), |n| n.last() == Some(&a.listen));
    }
    let moved = received(&whole);
    eventually("changes from the first master again", EVENTUALLY, || received(&whole), |n| *n > moved + 100);
    stop.store(true, Ordering::Relaxed);
    let acknowledged = rt().block_on(writer).unwrap();

    // Everything the master's binlog has, each once and in each domain's order, in both consumers.
    let binlog: Vec<Gtid> = a.binlog_gtids();
    let expected = by_domain(binlog.iter().copied().filter(|g| g.domain != 0));
    let total: usize = expected.values().map(Vec::len).sum();
    assert!(
        total >= acknowledged.len() && acknowledged.len() > 300,
        "{} written, {total} in the binlog",
        acknowledged.len()
    );
    for into in [&whole, &parts] {
        eventually("every transaction received", EVENTUALLY, || received(into), |n| *n >= total);
    }
    follower.abort();
    restarting.abort();
    for (name, into) in [("whole", &whole), ("restarting", &parts)] {
        let changes = into.lock().unwrap().changes.clone();
        assert_eq!(changes.len(), total, "{name}: nothing repeated");
        assert_eq!(by_domain(changes.iter().map(|c| c.gtid)), expected, "{name}: each domain once, in order");
        for g in &acknowledged {
            assert!(changes.iter().any(|c| c.gtid == *g), "{name}: acknowledged {g} missing");
        }
        // The row images are the data: the last after-image of each account is its balance now.
        let mut last: BTreeMap<String, Row> = BTreeMap::new();
        for change in &changes {
            for row in &change.changes {
                last.insert(row.key.clone(), row.after.clone().expect("increments leave a row"));
            }
            assert_eq!(change.events.first().map(|e| e.event.type_name()), Some("gtid"));
            assert!(matches!(change.events.last().map(|e| &e.event), Some(Event::Commit { .. })));
        }
        let mut client = a.client();
        for (key, image) in last {
            let row = rt().block_on(client.get("ledger", &key)).unwrap().unwrap();
            assert_eq!(row, image, "{name}: {key}");
        }
    }
}

#[test]
fn a_consumer_that_stops_reading_is_cut_off_at_its_bound_and_never_delays_a_commit() {
    const STALL_BYTES_MAX: u64 = 1 << 20;
    const BUFFER_BYTES_MAX: u64 = 256 << 10;
    const ROW_BYTES: usize = 16 << 10;
    let dir = tempfile::tempdir().unwrap();
    let semi = ["--durability", "local+network", "--semi-sync-timeout-ms", "10000"];
    let stall = STALL_BYTES_MAX.to_string();
    let buffer = BUFFER_BYTES_MAX.to_string();
    let mut master_args = semi.to_vec();
    master_args.extend(["--consumer-stall-bytes-max", &stall, "--dump-buffer-bytes-max", &buffer]);
    let master = start(&dir.path().join("m"), 1, &master_args);
    let replica = start(&dir.path().join("r"), 2, &semi);
    replicate(&replica, "m", &master, "slave_pos");
    master.eventually(
        "the replica confirming",
        || master.status()["semi_sync"].clone(),
        |s| s["replicas_connected"] == 1,
    );

    // The consumer subscribes, then reads nothing.
    let mut consumer = master.client();
    rt().block_on(async {
        consumer.auth(CONSUMER_TOKEN).await.unwrap();
        let subscribe =
            Request::Subscribe { name: "stuck".into(), position: None, heartbeat_ms: 60_000, domains: vec![] };
        match consumer.call(&subscribe).await.unwrap() {
            Response::Subscribed { .. } => {}
            other => panic!("{other:?}"),
        }
    });

    // Commits go on under semi-sync at the replica's pace until the master cuts the consumer off.
    let mut client = master.client();
    let payload = "x".repeat(ROW_BYTES);
    let mut commits = 0u64;
    let deadline = Instant::now() + Duration::from_secs(120);
    while consumers(&master)["cut_off_total"] == 0 {
        assert!(Instant::now() < deadline, "not cut off after {commits} commits: {}", consumers(&master));
        let row: Row = [("blob".to_string(), Value::Text(payload.clone()))].into();
        rt().block_on(client.transact(Txn::new().put("blobs", &format!("k{}", commits % 64), row))).unwrap();
        commits += 1;
        let listed = consumers(&master);
        for c in listed["consumers"].as_array().unwrap() {
            let held = c["buffered_bytes"].as_u64().unwrap();
            assert!(held <= BUFFER_BYTES_MAX + 2 * ROW_BYTES as u64, "the master holds {held} bytes for it: {c}");
        }
    }
    let listed = master.eventually("the cut-off consumer gone", || consumers(&master), |c| c["consumers"] == json!([]));
    let cut = &listed["cut_off"][0];
    assert_eq!((cut["name"].as_str(), cut["code"].as_str()), (Some("stuck"), Some("CONSUMER_CUT_OFF")), "{cut}");
    assert!(cut["reason"].as_str().unwrap().contains("--consumer-stall-bytes-max 1048576"), "{cut}");
    assert!(cut["buffered_bytes_peak"].as_u64().unwrap() <= BUFFER_BYTES_MAX + 2 * ROW_BYTES as u64, "{cut}");
    // No commit waited for the consumer: a commit that waited for an acknowledgement the stuck consumer never sends
    // would have waited out the semi-sync timeout, and semi-sync would have fallen back. Every commit was
    // acknowledged by the replica, at its pace, and semi-sync stayed on.
    let semi_status = master.status()["semi_sync"].clone();
    assert_eq!(
        (semi_status["state"].as_str(), semi_status["timeouts"].as_u64()),
        (Some("on"), Some(0)),
        "{semi_status}"
    );
    assert!(master.get_text("/metrics").lines().any(|l| l == "ferry_consumers_cut_off 1"));

    // Reading again, the consumer finds whole transactions, then the end of its stream.
    rt().block_on(async {
        let mut received = 0u64;
        let mut stream_id = None;
        loop {
            match consumer.read_response().await {
                Ok((id, Response::ReplTxn { file, end_offset, events, .. })) => {
                    assert_eq!(*stream_id.get_or_insert(id), id, "every frame of the stream has its request id");
                    ferry_client::decode_transaction(&file, end_offset, &events).unwrap();
                    received += 1;
                }
                Ok((_, Response::Error { code, message })) => {
                    assert_eq!(code, ErrorCode::ConsumerCutOff as u16, "{message}");
                    break;
                }
                Err(ClientError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                other => panic!("{other:?}"),
            }
        }
        assert!(received < commits, "{received} of {commits} reached the consumer before the cut-off");
    });
}

#[test]
fn consumers_are_bounded_in_number_and_take_no_place_kept_for_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), 1, &["--max-connections", "3", "--consumers-max", "1"]);
    let mut first = rt().block_on(Subscription::open(&node.listen, &options("first", None))).unwrap();
    let (code, message) = refusal(rt().block_on(Subscription::open(&node.listen, &options("second", None))));
    assert_eq!(code, ErrorCode::TooManyConnections);
    assert!(message.contains("at most 1 at once (--consumers-max)"), "{message}");

    // Two clients take the other places (the refused consumer's once its connection is closed)...
    let mut taken = Vec::new();
    for which in ["a client's place", "the refused consumer's place, given back"] {
        node.eventually(
            which,
            || {
                rt().block_on(async {
                    let mut c = Client::connect(&node.listen).await.ok()?;
                    c.ping().await.ok()?;
                    taken.push(c);
                    Some(())
                })
            },
            Option::is_some,
        );
    }
    rt().block_on(async {
        // ...so a consumer lands in a place kept for replicas: its token does not keep it there.
        let mut late = Client::connect(&node.listen).await.unwrap();
        let (code, message) = refusal(late.auth(CONSUMER_TOKEN).await);
        assert_eq!(code, ErrorCode::TooManyConnections);
        assert!(message.contains("a change consumer's token does not take a kept place"), "{message}");
        // The admin token still does.
        let mut replica = Client::connect(&node.listen).await.unwrap();
        replica.auth(TOKEN).await.unwrap();
        replica.ping().await.unwrap();

        taken[0].increment("t", "k", "n", 1).await.unwrap();
        assert_eq!(first.next().await.unwrap().changes[0].key, "k", "the first consumer still streams");
    });
}

#[test]
fn a_binlog_started_again_ends_a_subscription_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), 1, &[]);
    let mut sub = rt().block_on(Subscription::open(&node.listen, &options("c", Some("")))).unwrap();
    let mut client = node.client();
    let first = rt().block_on(client.increment("t", "k", "n", 1)).unwrap();
    assert_eq!(rt().block_on(sub.next()).unwrap().gtid, first.gtid);
    post_ok(&node, "/v1/binlog/reset", json!({"force": true}));
    let (code, message) = refusal(rt().block_on(sub.next()));
    assert_eq!(code, ErrorCode::BinlogUnreadable);
    assert!(message.contains("RESET MASTER") && message.contains("ferry-bin.000001"), "{message}");
}

#[test]
fn a_subscription_to_some_domains_gets_theirs_only_and_its_position_names_only_them() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), 1, &[]);
    let mut client = node.client();
    let mut in_two = Vec::new();
    rt().block_on(async {
        for i in 0..6u32 {
            let commit = client.transact(Txn::new().domain(1 + i % 2).increment("t", "k", "n", 1)).await.unwrap();
            if commit.gtid.domain == 2 {
                in_two.push(commit.gtid);
            }
        }
    });
    let mut o = options("two", Some("1-1-1"));
    o.domains = vec![2];
    let mut sub = rt().block_on(Subscription::open(&node.listen, &o)).unwrap();
    assert_eq!(sub.position().to_string(), "", "domain 1 of the start position is not this subscription's");
    let got: Vec<Gtid> = (0..3).map(|_| rt().block_on(sub.next()).unwrap().gtid).collect();
    assert_eq!(got, in_two);
    assert_eq!(sub.position().to_string(), in_two[2].to_string());
    let listed = consumers(&node);
    assert_eq!(listed["consumers"][0]["domains"], json!([2]));
    assert_eq!(listed["consumers"][0]["lag"].as_object().unwrap().keys().collect::<Vec<_>>(), ["2"]);

    // From its stored position, it goes on with domain 2's next transaction only.
    let next = rt().block_on(client.transact(Txn::new().domain(2).increment("t", "k", "n", 1))).unwrap();
    rt().block_on(client.transact(Txn::new().domain(1).increment("t", "k", "n", 1))).unwrap();
    o.start = Some(sub.position().clone());
    drop(sub);
    let mut again = rt().block_on(Subscription::open(&node.listen, &o)).unwrap();
    assert_eq!(rt().block_on(again.next()).unwrap().gtid, next.gtid);
}

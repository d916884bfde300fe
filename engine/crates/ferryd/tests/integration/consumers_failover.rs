//! Change consumers under semi-sync, on real nodes: a consumer is sent a client's commit only once a replica
//! confirmed it (under both wait points), so nothing a failover loses ever reaches it; and consumers following
//! the master while a ledger writer runs in two domains through two switchovers and a SIGKILL failover —
//! all done through the admin API — receive every acknowledged transaction exactly once, in each domain's
//! order, with row images equal to the data, also when they restart from their stored positions mid-run.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{
    self, eventually, post_ok, replicate_with as replicate, rt, start_with_consumers as start, NodeProc, Received,
    CONSUMER_TOKEN, EVENTUALLY,
};
use ferry_client::{Change, Client, ClientError, ErrorCode, FollowOptions, SubscribeOptions, Txn};
use ferry_core::binlog::BinlogCoord;
use ferry_core::gtid::{DomainId, Gtid, GtidPosition};
use ferry_core::protocol::{Request, Response};
use ferry_core::row::Row;
use serde_json::{json, Value as Json};

/// Semi-sync on every node, with a timeout no test run reaches: a fallback to asynchronous would let a consumer
/// see what a failover can lose (docs/protocol.md, "Change subscriptions").
const SEMI_SYNC: [&str; 6] =
    ["--durability", "local+network", "--semi-sync-replicas", "1", "--semi-sync-timeout-ms", "60000"];

fn forget(replica: &NodeProc, name: &str) {
    let (code, resp) = replica.delete_req(&format!("/v1/replication/{name}"));
    assert_eq!(code, 200, "DELETE /v1/replication/{name} on server {}: {resp}", replica.server_id);
}

fn semi(node: &NodeProc) -> Json {
    node.status()["semi_sync"].clone()
}

/// The one connection of a replica, as `GET /v1/replication` shows it.
fn connection(replica: &NodeProc) -> Json {
    replica.get("/v1/replication").1["connections"][0].clone()
}

fn position(value: &Json) -> GtidPosition {
    value.as_str().unwrap_or_default().parse().unwrap()
}

/// A consumer on the bare protocol, which shows the heartbeats' binlog coordinates.
async fn subscribe_raw(node: &NodeProc, name: &str) -> (Client, GtidPosition) {
    let mut consumer = Client::connect(&node.listen).await.unwrap();
    consumer.auth(CONSUMER_TOKEN).await.unwrap();
    let subscribe = Request::Subscribe { name: name.into(), position: None, heartbeat_ms: 50, domains: vec![] };
    match consumer.call(&subscribe).await.unwrap() {
        Response::Subscribed { position } => (consumer, position.parse().unwrap()),
        other => panic!("{other:?}"),
    }
}

/// Where a heartbeat says the node's binlog ended when it was sent.
fn heartbeat_end(file: &str, offset: u64) -> BinlogCoord {
    BinlogCoord { file_seq: ferry_core::binlog::file_seq(file).unwrap(), offset }
}

/// Reads heartbeats until one says the binlog ended past `past`; any transaction meanwhile fails the test.
async fn heartbeats_until_past(consumer: &mut Client, past: BinlogCoord, why: &str) -> BinlogCoord {
    loop {
        match tokio::time::timeout(EVENTUALLY, consumer.read_response()).await {
            Ok(Ok((_, Response::Heartbeat { file, offset, .. }))) => {
                let end = heartbeat_end(&file, offset);
                if end > past {
                    return end;
                }
            }
            Ok(other) => panic!("{why}: {other:?}"),
            Err(_) => panic!("{why}: no heartbeat past {past:?} within {EVENTUALLY:?}"),
        }
    }
}

/// The next transaction of a bare subscription (heartbeats passed over).
async fn next_change(consumer: &mut Client) -> Change {
    loop {
        match tokio::time::timeout(EVENTUALLY, consumer.read_response()).await {
            Ok(Ok((_, Response::Heartbeat { .. }))) => {}
            Ok(Ok((_, Response::ReplTxn { file, end_offset, events, ack }))) => {
                assert!(!ack, "a consumer is never asked to confirm");
                return ferry_client::decode_transaction(&file, end_offset, &events).unwrap();
            }
            Ok(other) => panic!("{other:?}"),
            Err(_) => panic!("no transaction within {EVENTUALLY:?}"),
        }
    }
}

#[test]
fn a_consumer_is_sent_a_client_commit_only_once_a_replica_confirmed_it() {
    for wait_point in ["after_commit", "after_sync"] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = SEMI_SYNC.to_vec();
        args.extend(["--semi-sync-wait-point", wait_point]);
        let master = start(&dir.path().join("m"), 1, &args);
        let replica = start(&dir.path().join("r"), 2, &["--read-only"]);
        replicate(&replica, "m", &master, "slave_pos");
        master.eventually("the replica confirming", || semi(&master), |s| s["replicas_connected"] == 1);
        let mut writer = master.client();
        let first = rt().block_on(writer.increment("t", "k", "n", 1)).unwrap().gtid;

        let (mut consumer, from) = rt().block_on(subscribe_raw(&master, "early"));
        assert_eq!(from.to_string(), first.to_string(), "{wait_point}: confirmed, so in the position from now");
        let start = BinlogCoord { file_seq: 0, offset: 0 };
        let before = rt().block_on(heartbeats_until_past(&mut consumer, start, "idle"));

        // The replica stops confirming: the next commit is written on the master and waits.
        post_ok(&replica, "/v1/replication/m/stop", json!({}));
        master.eventually("no replica confirming", || semi(&master), |s| s["replicas_connected"] == 0);
        let waiting = rt().spawn(async move { writer.increment("t", "k", "n", 1).await });
        let written = master.eventually(
            "the commit in the master's binlog",
            || position(&master.status()["gtid_binlog_pos"]),
            |p| p.get(0) != Some(first),
        );
        let held = written.get(0).unwrap();

        // The stream saw the binlog grow past it and sent nothing; a consumer subscribing now starts before it.
        rt().block_on(heartbeats_until_past(&mut consumer, before, "a commit no replica confirmed was sent"));
        let (mut late, late_from) = rt().block_on(subscribe_raw(&master, "late"));
        assert_eq!(late_from.to_string(), first.to_string(), "{wait_point}: the waiting commit is not in 'now'");
        let listed = master.get("/v1/consumers").1;
        for c in listed["consumers"].as_array().unwrap() {
            assert_eq!(c["position"], first.to_string(), "{wait_point}: {c}");
        }
        assert!(!waiting.is_finished(), "{wait_point}: the commit still waits for a replica");

        // The replica confirms it: the client hears back, and the consumers get it, the replica having it already.
        post_ok(&replica, "/v1/replication/m/start", json!({}));
        for c in [&mut consumer, &mut late] {
            let change = rt().block_on(next_change(c));
            assert_eq!(change.gtid, held, "{wait_point}");
            let received = position(&connection(&replica)["received_position"]);
            assert!(received.get(0).is_some_and(|g| g.seq >= held.seq), "{wait_point}: the replica has {received}");
        }
        let commit = rt().block_on(waiting).unwrap().unwrap();
        assert_eq!(commit.gtid, held);
        let s = semi(&master);
        assert_eq!((s["state"].as_str(), s["timeouts"].as_u64()), (Some("on"), Some(0)), "{wait_point}: {s}");
    }
}

/// Per domain, the GTIDs in the order given.
fn by_domain(gtids: impl IntoIterator<Item = Gtid>) -> BTreeMap<DomainId, Vec<Gtid>> {
    let mut out: BTreeMap<DomainId, Vec<Gtid>> = BTreeMap::new();
    for g in gtids {
        out.entry(g.domain).or_default().push(g);
    }
    out
}

/// What the ledger writer was told.
#[derive(Default, Debug)]
struct Written {
    /// Commits answered as committed.
    acknowledged: Vec<Gtid>,
    /// Commits whose connection broke before their answer (the master killed): committed or not.
    unknown: usize,
}

/// A ledger writer following the writable node among `nodes`: increments accounts in domains 1 and 2 in turn
/// until `stop`. A node that refuses writes (read-only), cannot be reached, or breaks the connection moves it to
/// the next node; a round with no writable node (a switchover's or failover's window) is waited out by a pause.
async fn write_ledger(nodes: Vec<String>, stop: Arc<AtomicBool>) -> Written {
    /// Pause of the workload while no node takes writes.
    const NO_MASTER_PAUSE: Duration = Duration::from_millis(5);
    let mut written = Written::default();
    let mut at = 0;
    let mut client: Option<Client> = None;
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Some(c) = &mut client else {
            match Client::connect(&nodes[at]).await {
                Ok(c) => client = Some(c),
                Err(_) => {
                    at = (at + 1) % nodes.len();
                    tokio::time::sleep(NO_MASTER_PAUSE).await;
                }
            }
            continue;
        };
        let domain: DomainId = 1 + (i % 2) as u32;
        let txn = Txn::new().domain(domain).increment("ledger", &format!("acct{}", i % 7), "balance", 1);
        match c.transact(txn).await {
            Ok(commit) => {
                written.acknowledged.push(commit.gtid);
                i += 1;
            }
            Err(e) if e.code() == Some(ErrorCode::ReadOnly) => {
                client = None;
                at = (at + 1) % nodes.len();
                tokio::time::sleep(NO_MASTER_PAUSE).await;
            }
            Err(ClientError::Server { code, message, .. }) => panic!("write to {}: {code:?} {message}", nodes[at]),
            Err(_) => {
                written.unknown += 1;
                client = None;
                at = (at + 1) % nodes.len();
            }
        }
    }
    written
}

fn follow_options(name: &str, start: &str) -> FollowOptions {
    let mut o = SubscribeOptions::new(name, CONSUMER_TOKEN);
    o.start = Some(start.parse().unwrap());
    o.heartbeat = Duration::from_millis(100);
    let mut follow = FollowOptions::new(o);
    follow.role_check = Duration::from_millis(200);
    follow
}

/// Follows the master among `nodes` from `start`, recording into `into`, until `until` changes are in it;
/// returns the position to resume from.
async fn follow(nodes: Vec<String>, start: String, name: &str, into: Arc<Mutex<Received>>, until: usize) -> String {
    common::follow(nodes, follow_options(name, &start), name, into, until).await.to_string()
}

/// Planned switchover through the admin API: the old master read-only once its commits in flight have their
/// answers, the candidate level with its position and promoted, the old master and `others` following it.
fn switchover(old: &NodeProc, new: &NodeProc, others: &[&NodeProc]) {
    let (old_name, new_name) = (name_of(old), name_of(new));
    let ro = post_ok(old, "/v1/read-only", json!({"read_only": true, "wait_for_in_flight_ms": 30_000}));
    let position = ro["gtid_binlog_pos"].as_str().unwrap().to_string();
    let reached = post_ok(new, "/v1/wait-for-position", json!({"position": position, "timeout_ms": 60_000}));
    assert_eq!(reached["reached"], true, "{reached}");
    forget(new, &old_name);
    post_ok(new, "/v1/read-only", json!({"read_only": false}));
    replicate(old, &new_name, new, "current_pos");
    for other in others {
        forget(other, &old_name);
        replicate(other, &new_name, new, "slave_pos");
    }
}

/// Failover through the admin API after the master died: each replica applies what it received, the one that
/// received most (the others received a prefix of the same binlog) is promoted, the others follow it.
fn failover<'a>(dead: &NodeProc, replicas: [&'a NodeProc; 2]) -> &'a NodeProc {
    let dead_name = name_of(dead);
    let mut received = Vec::new();
    for r in replicas {
        let conn = r.eventually(
            "the replica applied all it received from the dead master",
            || connection(r),
            |c| c["io_state"] != "connected" && c["received_position"] == c["applied_position"],
        );
        received.push(position(&conn["received_position"]));
    }
    let seqs = |p: &GtidPosition| p.iter().map(|g| g.seq).sum::<u64>();
    let (new, other) = if seqs(&received[0]) >= seqs(&received[1]) { (0, 1) } else { (1, 0) };
    let (ahead, behind) = (&received[new], &received[other]);
    for g in behind.iter() {
        assert!(ahead.get(g.domain).is_some_and(|a| a.seq >= g.seq), "{ahead} is not ahead of {behind}");
    }
    let (new, other) = (replicas[new], replicas[other]);
    forget(new, &dead_name);
    post_ok(new, "/v1/read-only", json!({"read_only": false}));
    forget(other, &dead_name);
    replicate(other, &name_of(new), new, "slave_pos");
    new
}

/// The connection name a node's replicas give it.
fn name_of(node: &NodeProc) -> String {
    format!("s{}", node.server_id)
}

#[test]
fn consumers_get_every_acknowledged_transaction_once_across_switchovers_and_a_sigkill_failover() {
    let dir = tempfile::tempdir().unwrap();
    let mut replica_args = SEMI_SYNC.to_vec();
    replica_args.push("--read-only");
    let a = start(&dir.path().join("a"), 1, &SEMI_SYNC);
    let b = start(&dir.path().join("b"), 2, &replica_args);
    let mut c = start(&dir.path().join("c"), 3, &replica_args);
    replicate(&b, &name_of(&a), &a, "slave_pos");
    replicate(&c, &name_of(&a), &a, "slave_pos");
    a.eventually("both replicas confirming", || semi(&a), |s| s["replicas_connected"] == 2);
    let nodes = vec![a.listen.clone(), b.listen.clone(), c.listen.clone()];

    // Transactions before the subscriptions: the consumers start from the GTID position after them, so they must
    // receive none of these and everything after.
    let mut early = a.client();
    for i in 0..20u64 {
        let txn = Txn::new().domain(1 + (i % 2) as u32).increment("ledger", &format!("acct{}", i % 7), "balance", 1);
        rt().block_on(early.transact(txn)).unwrap();
    }
    let from = position(&a.status()["gtid_binlog_pos"]);
    assert_eq!(from.iter().filter(|g| g.domain != 0).count(), 2, "both domains written before: {from}");
    let after_start = |g: &Gtid| g.domain != 0 && from.get(g.domain).is_none_or(|f| g.seq > f.seq);

    let stop = Arc::new(AtomicBool::new(false));
    let writer = rt().spawn(write_ledger(nodes.clone(), stop.clone()));
    let whole = Arc::new(Mutex::new(Received::default()));
    let follower = rt().spawn(follow(nodes.clone(), from.to_string(), "whole", whole.clone(), usize::MAX));
    // A second consumer stops every 150 transactions and resumes from the position it stored.
    let parts = Arc::new(Mutex::new(Received::default()));
    let restarts = Arc::new(AtomicUsize::new(0));
    let restarting = rt().spawn({
        let (nodes, parts, restarts, from) = (nodes.clone(), parts.clone(), restarts.clone(), from.to_string());
        async move {
            let mut stored = from;
            loop {
                let until = parts.lock().unwrap().changes.len() + 150;
                stored = follow(nodes.clone(), stored, "restarting", parts.clone(), until).await;
                restarts.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let received = |into: &Arc<Mutex<Received>>| into.lock().unwrap().changes.len();
    let followed = |into: &Arc<Mutex<Received>>| into.lock().unwrap().nodes.clone();
    let under_way = |what: &str| {
        let from = received(&whole);
        eventually(what, EVENTUALLY, || (received(&whole), received(&parts)), |(w, p)| *w > from + 100 && *p > from);
    };

    under_way("the consumers under way");
    switchover(&a, &b, &[&c]);
    for into in [&whole, &parts] {
        eventually("following b", EVENTUALLY, || followed(into), |n| n.last() == Some(&b.listen));
    }
    under_way("changes from b");
    switchover(&b, &c, &[&a]);
    for into in [&whole, &parts] {
        eventually("following c", EVENTUALLY, || followed(into), |n| n.last() == Some(&c.listen));
    }
    under_way("changes from c");
    c.sigkill();
    let new = failover(&c, [&a, &b]);
    for into in [&whole, &parts] {
        eventually("following the new master", EVENTUALLY, || followed(into), |n| n.last() == Some(&new.listen));
    }
    under_way("changes from the new master");
    stop.store(true, Ordering::Relaxed);
    let written = rt().block_on(writer).unwrap();

    // The new master's binlog is what the cluster kept: each consumer has all of it after its start position, once,
    // in each domain's order.
    let expected = by_domain(new.binlog_gtids().into_iter().filter(after_start));
    let total: usize = expected.values().map(Vec::len).sum();
    assert!(written.acknowledged.len() > 400, "{} written", written.acknowledged.len());
    for into in [&whole, &parts] {
        eventually("every transaction received", EVENTUALLY, || received(into), |n| *n >= total);
    }
    follower.abort();
    restarting.abort();
    let mut client = new.client();
    for (name, into) in [("whole", &whole), ("restarting", &parts)] {
        let changes = into.lock().unwrap().changes.clone();
        assert_eq!(changes.len(), total, "{name}: nothing repeated, nothing the failover lost");
        assert_eq!(by_domain(changes.iter().map(|c| c.gtid)), expected, "{name}: each domain once, in order");
        for g in &written.acknowledged {
            assert!(changes.iter().any(|c| c.gtid == *g), "{name}: acknowledged {g} missing");
        }
        let mut last: BTreeMap<String, Row> = BTreeMap::new();
        for change in &changes {
            for row in &change.changes {
                last.insert(row.key.clone(), row.after.clone().expect("increments leave a row"));
            }
        }
        for (key, image) in last {
            let row = rt().block_on(client.get("ledger", &key)).unwrap().unwrap();
            assert_eq!(row, image, "{name}: {key}");
        }
    }
    let restarts = restarts.load(Ordering::Relaxed);
    assert!(restarts >= 2, "the restarting consumer resumed {restarts} times from its stored position");
}

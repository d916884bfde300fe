//! Read-only and the client commits in flight, on real nodes: a commit admitted before read-only went on may
//! still be in the commit queue; `POST /v1/read-only` with `wait_for_in_flight_ms` answers once every such
//! commit has its answer, with the binlog position at which client writes stopped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::{ErrorCode, Txn};
use ferry_core::{Gtid, GtidPosition};
use serde_json::json;

/// What one writer saw: every GTID acknowledged to it, and how many of its transactions were refused read-only.
#[derive(Default)]
struct Seen {
    acked: Vec<Gtid>,
    refused: u64,
}

#[test]
fn read_only_waits_for_commits_in_flight_and_returns_where_writes_stopped() {
    let dir = tempfile::tempdir().unwrap();
    // A leader waits 100 ms for more members than there are writers: commits sit in the queue nearly all the time,
    // so read-only finds some in flight even when the writers' own runtime is slow to send the next ones (a busy
    // machine left it none at 20 ms).
    let node = NodeProc::start(dir.path(), 1, &["--commit-wait-count", "17", "--commit-wait-us", "100000"]);
    let (writers, domains) = (16u32, 2u32);
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let (listen, stop) = (node.listen.clone(), stop.clone());
            rt().spawn(async move {
                let mut c = ferry_client::Client::connect(&listen).await.unwrap();
                let mut seen = Seen::default();
                while !stop.load(Ordering::SeqCst) {
                    let txn = Txn::new().domain(w % domains).increment("t", &format!("k{w}"), "n", 1);
                    match c.transact(txn).await {
                        Ok(commit) => {
                            assert_eq!(seen.refused, 0, "{} committed after a read-only refusal", commit.gtid);
                            seen.acked.push(commit.gtid);
                        }
                        Err(e) if e.code() == Some(ErrorCode::ReadOnly) => {
                            seen.refused += 1;
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                        Err(e) => panic!("writer {w}: {e}"),
                    }
                }
                seen
            })
        })
        .collect();
    node.eventually("500 commits", || node.status()["counters"]["commits"].as_u64().unwrap(), |n| *n >= 500);

    let (code, body) =
        node.post("/v1/read-only", json!({"read_only": true, "wait_for_in_flight_ms": 10_000}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    assert_eq!((body["read_only"].as_bool(), body["commits_in_flight"].as_u64()), (Some(true), Some(0)), "{body}");
    assert!(body["in_flight_at_read_only"].as_u64().unwrap() > 0, "writers had commits in flight: {body}");
    let stopped: GtidPosition = body["gtid_binlog_pos"].as_str().unwrap().parse().unwrap();

    // Writers keep trying a while: every attempt is refused, and the position stands still.
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<Seen> = tasks.into_iter().map(|t| rt().block_on(t).unwrap()).collect();
    assert!(seen.iter().all(|s| s.refused > 0), "every writer met read-only");
    let status = node.status();
    assert_eq!(status["gtid_binlog_pos"], stopped.to_string());
    assert_eq!(status["commits_in_flight"], 0);
    assert!(node.get_text("/metrics").lines().any(|l| l == "ferry_commits_in_flight 0"));

    // Every acknowledged commit is at or before the returned position, which is exactly the newest of them.
    let mut newest: BTreeMap<u32, u64> = BTreeMap::new();
    let acked: Vec<Gtid> = seen.iter().flat_map(|s| s.acked.iter().copied()).collect();
    for gtid in &acked {
        assert!(stopped.get(gtid.domain).is_some_and(|p| p.seq >= gtid.seq), "{gtid} is past {stopped}");
        let n = newest.entry(gtid.domain).or_default();
        *n = (*n).max(gtid.seq);
    }
    let newest: Vec<(u32, u64)> = newest.into_iter().collect();
    let returned: Vec<(u32, u64)> = stopped.iter().map(|g| (g.domain, g.seq)).collect();
    assert_eq!(returned, newest);
    assert_eq!(status["counters"]["commits"], acked.len(), "every commit in the binlog was acknowledged");
}

/// `POST /v1/read-only` with a wait for the commits in flight, sent from a thread of its own: its status and body.
fn read_only_waiting(node: &NodeProc, wait_ms: u64) -> std::thread::JoinHandle<(u16, serde_json::Value)> {
    let url = format!("http://{}/v1/read-only", node.admin);
    std::thread::spawn(move || {
        let body = json!({"read_only": true, "wait_for_in_flight_ms": wait_ms});
        let resp = reqwest::blocking::Client::new().post(url).bearer_auth(TOKEN).json(&body).send().unwrap();
        (resp.status().as_u16(), resp.json::<serde_json::Value>().unwrap())
    })
}

#[test]
fn a_commit_still_in_flight_makes_the_wait_time_out_and_read_only_off_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    // No replica confirms yet: a commit waits in flight for one, within a semi-sync timeout far longer than the
    // steps below however loaded the machine is; at the end a replica joins and its acknowledgement ends the wait.
    let node = NodeProc::start(
        &dir.path().join("m"),
        1,
        &["--durability", "local+network", "--semi-sync-timeout-ms", "120000"],
    );
    let listen = node.listen.clone();
    let stuck = rt().spawn(async move {
        let mut c = ferry_client::Client::connect(&listen).await.unwrap();
        c.increment("t", "k", "n", 1).await
    });
    node.eventually("a commit in flight", || node.status()["commits_in_flight"].clone(), |n| *n == 1);
    assert!(node.get_text("/metrics").lines().any(|l| l == "ferry_commits_in_flight 1"));

    let (code, body) =
        node.post("/v1/read-only", json!({"read_only": true, "wait_for_in_flight_ms": 100}), Some(TOKEN));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("commits_in_flight")), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("1 client commit(s)") && message.contains("100 ms"), "{message}");
    assert_eq!(node.status()["read_only"], true, "the node stays read-only");

    // A wait that read-only off interrupts says so.
    let changes = |node: &NodeProc| node.log().matches("read-only changed through the admin API").count();
    let changed_before = changes(&node);
    let waiting = read_only_waiting(&node, 10_000);
    // The waiting call has set read-only (it logs that just before it waits): turning it off now interrupts it.
    node.eventually("the waiting read-only call", || changes(&node), |n| *n != changed_before);
    assert_eq!(node.post("/v1/read-only", json!({"read_only": false}), Some(TOKEN)).0, 200);
    let (code, body) = waiting.join().unwrap();
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("read_only_off")), "{body}");

    // Once the commit has its answer (a replica joins and acknowledges it), the wait ends with the position that
    // includes it.
    let changed_before = changes(&node);
    let waiting = read_only_waiting(&node, 60_000);
    node.eventually("the waiting read-only call", || changes(&node), |n| *n != changed_before);
    assert_eq!(node.status()["commits_in_flight"], 1, "the commit still waits for an acknowledgement");
    let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    replica.post("/v1/replication/m/change-master", json!({"master": node.listen}), Some(TOKEN));
    replica.post("/v1/replication/m/start", json!({}), Some(TOKEN));
    let (code, body) = waiting.join().unwrap();
    assert_eq!(code, 200, "{body}");
    assert_eq!(node.status()["semi_sync"]["timeouts"], 0, "the commit was acknowledged, not timed out");
    let commit = rt().block_on(stuck).unwrap().unwrap();
    assert_eq!(body["gtid_binlog_pos"], commit.gtid.to_string());
    assert_eq!(body["in_flight_at_read_only"], 1);
}

#[test]
fn the_wait_goes_with_read_only_on_and_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let (code, body) =
        node.post("/v1/read-only", json!({"read_only": false, "wait_for_in_flight_ms": 100}), Some(TOKEN));
    assert_eq!(code, 400, "{body}");
    let (code, body) =
        node.post("/v1/read-only", json!({"read_only": true, "wait_for_in_flight_ms": 10_000_000}), Some(TOKEN));
    assert_eq!(code, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("limit"), "{body}");
    assert_eq!(node.status()["read_only"], false, "a refused call changes nothing");
    // Nothing in flight: the answer is immediate, with the (empty) position.
    let (code, body) = node.post("/v1/read-only", json!({"read_only": true, "wait_for_in_flight_ms": 0}), Some(TOKEN));
    assert_eq!((code, body["gtid_binlog_pos"].as_str()), (200, Some("")), "{body}");
}

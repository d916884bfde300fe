//! Semi-synchronous replication between real nodes: with durability `local+network` a commit is acknowledged
//! only once a replica has it in its relay log; with no replica confirming in time the master falls back to
//! asynchronous replication and says so (status and metrics) until a replica has caught up again. Only a node's
//! own clients' commits wait: a replica applying its master's transactions never waits for replicas of its own.

use std::time::Instant;

use crate::common::{rt, NodeProc, TOKEN};
use serde_json::{json, Value};

fn semi(node: &NodeProc) -> Value {
    node.status()["semi_sync"].clone()
}

/// Waits (within [`EVENTUALLY`]) until the master's semi-sync status satisfies `check`.
fn wait_semi(master: &NodeProc, what: &str, check: impl Fn(&Value) -> bool) {
    master.eventually(what, || semi(master), check);
}

#[test]
fn commits_wait_for_a_replica_and_fall_back_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let master =
        NodeProc::start(&dir.path().join("m"), 1, &["--durability", "local+network", "--semi-sync-timeout-ms", "300"]);
    let mut replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    let mut c = master.client();

    // No replica: the first commit waits out the timeout, then the master is asynchronous.
    assert_eq!(semi(&master)["state"], "on");
    rt().block_on(c.increment("t", "k", "n", 1)).unwrap();
    let s = semi(&master);
    assert_eq!((s["state"].as_str(), s["timeouts"].as_u64()), (Some("fallen_back"), Some(1)), "{s}");
    assert!(master.get_text("/metrics").contains("ferry_semi_sync_on 0"));
    rt().block_on(c.increment("t", "k", "n", 1)).unwrap();
    assert_eq!(semi(&master)["timeouts"], 1, "no more waiting while fallen back");

    // A replica catches up and confirms: commits wait for it again.
    replica.post("/v1/replication/m/change-master", json!({"master": master.listen}), Some(TOKEN));
    replica.post("/v1/replication/m/start", json!({}), Some(TOKEN));
    wait_semi(&master, "semi-sync back on", |s| s["state"] == "on");
    for _ in 0..20 {
        let commit = rt().block_on(c.increment("t", "k", "n", 1)).unwrap();
        // Acknowledged, hence already in the replica's relay log.
        let received =
            replica.get("/v1/replication").1["connections"][0]["received_position"].as_str().unwrap().to_string();
        assert!(
            received.parse::<ferry_core::GtidPosition>().unwrap().get(0).unwrap().seq >= commit.gtid.seq,
            "{received} < {}",
            commit.gtid
        );
    }
    let s = semi(&master);
    assert_eq!(
        (s["state"].as_str(), s["timeouts"].as_u64(), s["replicas_connected"].as_u64()),
        (Some("on"), Some(1), Some(1))
    );
    assert!(s["waits"].as_u64().unwrap() >= 20);

    // The replica dies: the next commit times out and the master falls back again.
    replica.sigkill();
    rt().block_on(c.increment("t", "k", "n", 1)).unwrap();
    wait_semi(&master, "fallen back after the replica died", |s| s["timeouts"] == 2);
    assert_eq!(semi(&master)["state"], "fallen_back");
}

#[test]
fn a_replica_with_semi_sync_on_applies_without_waiting_for_replicas_of_its_own() {
    // Every node of a cluster runs with semi-sync on, so that a promoted replica keeps the guarantee. The timeout
    // is long: a replica waiting for confirmations it cannot get would stall its apply for all of it.
    let timeout_ms = 10_000;
    let semi_on = ["--durability", "local+network", "--semi-sync-replicas", "1", "--semi-sync-timeout-ms", "10000"];
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &semi_on);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &semi_on);
    replica.post("/v1/replication/m/change-master", json!({"master": master.listen}), Some(TOKEN));
    replica.post("/v1/replication/m/start", json!({}), Some(TOKEN));
    wait_semi(&master, "the replica confirms to the master", |s| s["replicas_connected"] == 1);

    // Four writers, 50 commits each; each commit is acknowledged once the replica has received it.
    let (writers, per_writer) = (4, 50);
    let started = Instant::now();
    rt().block_on(async {
        let tasks: Vec<_> = (0..writers)
            .map(|w| {
                let listen = master.listen.clone();
                tokio::spawn(async move {
                    let mut c = ferry_client::Client::connect(&listen).await.unwrap();
                    for _ in 0..per_writer {
                        c.increment("t", &format!("k{w}"), "n", 1).await.unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let writing = started.elapsed();
    let target = master.status()["gtid_binlog_pos"].as_str().unwrap().to_string();
    assert_eq!(target, format!("0-1-{}", writers * per_writer));

    // The replica keeps up: it has applied everything well within one semi-sync timeout of the last commit.
    let caught_up_ms = timeout_ms / 4;
    let (code, body) =
        replica.post("/v1/wait-for-position", json!({"position": target, "timeout_ms": caught_up_ms}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    assert!(
        body["reached"] == true,
        "the replica is at {} {caught_up_ms} ms after the writes ({writing:?})",
        body["position"]
    );
    let applied = &replica.get("/v1/replication").1["connections"][0];
    assert_eq!(applied["transactions_applied"], writers * per_writer, "{applied}");

    // It never waited for confirmations, so it never timed out nor fell back.
    let s = semi(&replica);
    assert_eq!(
        (s["state"].as_str(), s["waits"].as_u64(), s["timeouts"].as_u64()),
        (Some("on"), Some(0), Some(0)),
        "{s}"
    );
    let metrics = replica.get_text("/metrics");
    for line in ["ferry_semi_sync_on 1", "ferry_semi_sync_waits 0", "ferry_semi_sync_timeouts 0"] {
        assert!(metrics.lines().any(|l| l == line), "replica metrics lack {line:?}:\n{metrics}");
    }

    // The master's commits did wait, and got the replica's confirmations in time.
    let s = semi(&master);
    assert_eq!(
        (s["state"].as_str(), s["timeouts"].as_u64(), s["replicas_connected"].as_u64()),
        (Some("on"), Some(0), Some(1)),
        "{s}"
    );
    assert!(s["waits"].as_u64().unwrap() >= 1, "{s}");
    assert!(master.get_text("/metrics").lines().any(|l| l == "ferry_semi_sync_timeouts 0"));
}

/// The wait point (MariaDB's rpl_semi_sync_master_wait_point). Under `after_sync` a commit waiting for its
/// replica's confirmation is written and fsynced but not visible to the master's readers (lossless: nobody sees
/// what no replica has); under `after_commit` it is visible while its client still waits for the answer.
#[test]
fn after_sync_hides_a_commit_waiting_for_its_replica_and_after_commit_does_not() {
    for (wait_point, visible_while_waiting) in [("after_sync", false), ("after_commit", true)] {
        let dir = tempfile::tempdir().unwrap();
        let args =
            ["--durability", "local+network", "--semi-sync-timeout-ms", "60000", "--semi-sync-wait-point", wait_point];
        let master = NodeProc::start(&dir.path().join("m"), 1, &args);
        assert_eq!(semi(&master)["wait_point"], wait_point);
        let gauge = format!("ferry_semi_sync_after_sync {}", u8::from(wait_point == "after_sync"));
        assert!(master.get_text("/metrics").contains(&gauge), "{gauge}");
        // No replica yet: the commit waits (for up to a minute) for a confirmation.
        let writer = {
            let listen = master.listen.clone();
            std::thread::spawn(move || {
                rt().block_on(async {
                    let mut c = ferry_client::Client::connect(&listen).await.unwrap();
                    c.increment("t", "k", "n", 1).await.unwrap()
                })
            })
        };
        wait_semi(&master, "the commit waiting for a replica", |s| s["waits"] == 1);
        let mut reader = master.client();
        let seen = rt().block_on(reader.get("t", "k")).unwrap();
        assert_eq!(seen.is_some(), visible_while_waiting, "{wait_point}: the waiting commit's row as a reader sees it");
        assert!(!writer.is_finished(), "{wait_point}: the client is still waiting");
        assert_eq!(master.status()["gtid_binlog_state"], "0-1-1", "{wait_point}: it is in the binlog either way");

        // A replica connects and confirms: the client is answered, and the row is visible.
        let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
        replica.post("/v1/replication/m/change-master", json!({"master": master.listen}), Some(TOKEN));
        replica.post("/v1/replication/m/start", json!({}), Some(TOKEN));
        let commit = writer.join().unwrap();
        assert_eq!(commit.gtid.to_string(), "0-1-1");
        assert!(rt().block_on(reader.get("t", "k")).unwrap().is_some(), "{wait_point}: visible once confirmed");
        let s = semi(&master);
        assert_eq!((s["state"].as_str(), s["timeouts"].as_u64()), (Some("on"), Some(0)), "{wait_point}: {s}");
        // Later commits go the same way, each confirmed before it is answered.
        let mut c = master.client();
        for _ in 0..5 {
            rt().block_on(c.increment("t", "k", "n", 1)).unwrap();
        }
        assert_eq!(semi(&master)["timeouts"], 0);
        let row = rt().block_on(reader.get("t", "k")).unwrap().unwrap();
        assert_eq!(row["n"], ferry_core::row::Value::Int(6));
    }
}

/// A stop does not wait out semi-sync: a client commit waiting for a confirmation no replica will give (a
/// ten-minute timeout) is ended by SIGTERM, which exits cleanly at once; the client gets no answer — neither
/// "committed" (no replica has it) nor a refusal (it is in the binlog) — and the commit is there after a restart.
#[test]
fn a_stop_ends_a_long_semi_sync_wait_and_the_client_learns_nothing_false() {
    for wait_point in ["after_sync", "after_commit"] {
        let dir = tempfile::tempdir().unwrap();
        let args =
            ["--durability", "local+network", "--semi-sync-timeout-ms", "600000", "--semi-sync-wait-point", wait_point];
        let mut master = NodeProc::start(&dir.path().join("m"), 1, &args);
        let writer = {
            let listen = master.listen.clone();
            std::thread::spawn(move || {
                rt().block_on(async {
                    let mut c = ferry_client::Client::connect(&listen).await.unwrap();
                    c.increment("t", "k", "n", 1).await
                })
            })
        };
        wait_semi(&master, "the commit waiting for a replica", |s| s["waits"] == 1);
        master.stop(); // asserts a clean exit, well within its deadline though the semi-sync timeout is ten minutes
        let answer = writer.join().unwrap();
        match &answer {
            Err(ferry_client::ClientError::Io(_)) | Err(ferry_client::ClientError::Protocol(_)) => {}
            other => panic!("{wait_point}: the client must learn nothing of the commit's fate, got {other:?}"),
        }
        assert!(
            master.log().contains("outcome is unknown"),
            "{wait_point}: the node says what it left\n{}",
            master.log()
        );
        master.restart();
        assert_eq!(master.status()["gtid_binlog_state"], "0-1-1", "{wait_point}: the commit is in the binlog");
    }
}

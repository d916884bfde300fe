//! Semi-synchronous replication between real nodes: with durability `local+network` a commit is acknowledged
//! only once a replica has it in its relay log; with no replica confirming in time the master falls back to
//! asynchronous replication and says so (status and metrics) until a replica has caught up again.

mod common;

use std::time::{Duration, Instant};

use common::{rt, NodeProc, TOKEN};
use serde_json::{json, Value};

fn semi(node: &NodeProc) -> Value {
    node.status()["semi_sync"].clone()
}

fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
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
    wait_until("semi-sync back on", || semi(&master)["state"] == "on");
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
    wait_until("fallen back after the replica died", || semi(&master)["timeouts"] == 2);
    assert_eq!(semi(&master)["state"], "fallen_back");
}

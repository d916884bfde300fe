//! Parallel apply on a real replica: in order within a domain, free across domains, equal data at the end,
//! and crash safety when the replica is SIGKILLed in the middle of applying in parallel.

use std::time::Duration;

use crate::common::{assert_same_order_per_domain, rt, NodeProc, TOKEN};
use ferry_client::{Client, Txn};
use ferry_core::row::Value;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value as Json};

/// `clients` concurrent clients each commit `per_client` transactions: an append-only row in `log_<domain>` and
/// an increment of a hot counter of the domain (so transactions of one domain conflict on it).
fn load(master: &NodeProc, domains: u32, clients: u32, per_client: u32, tag: &str) {
    let addr = master.listen.clone();
    let tag = tag.to_string();
    rt().block_on(async move {
        let tasks: Vec<_> = (0..clients)
            .map(|c| {
                let (addr, tag) = (addr.clone(), tag.clone());
                tokio::spawn(async move {
                    let mut client = Client::connect(&addr).await.unwrap();
                    for i in 0..per_client {
                        let d = (c + i) % domains;
                        let row =
                            [("c".to_string(), Value::Int(i64::from(c))), ("i".to_string(), Value::Int(i64::from(i)))]
                                .into();
                        let txn = Txn::new()
                            .domain(d)
                            .put(&format!("log_{d}"), &format!("{tag}-{c}-{i}"), row)
                            .increment(&format!("hot_{d}"), "counter", "n", 1);
                        client.transact(txn).await.unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
}

fn converge(replica: &NodeProc, master: &NodeProc) {
    let target = master.status()["gtid_binlog_pos"].as_str().unwrap().to_string();
    let (_, body) =
        replica.post("/v1/wait-for-position", json!({"position": target, "timeout_ms": 60_000}), Some(TOKEN));
    assert_eq!(body["reached"], true, "replica did not reach {target}: {}\n{}", replica.status(), replica.log());
}

fn setup(replica: &NodeProc, master: &NodeProc, mode: &str, workers: usize, domain_max: usize) {
    let body =
        json!({"master": master.listen, "parallel_mode": mode, "workers": workers, "domain_workers_max": domain_max});
    let (code, resp) = replica.post("/v1/replication/m/change-master", body, Some(TOKEN));
    assert_eq!(code, 200, "{resp}");
    let (code, resp) = replica.post("/v1/replication/m/start", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{resp}");
}

fn connection(replica: &NodeProc) -> Json {
    replica.get("/v1/replication").1["connections"][0].clone()
}

#[test]
fn optimistic_and_conservative_apply_keep_each_domains_order_and_end_equal() {
    for (mode, workers, domain_max) in [("optimistic", 8, 4), ("conservative", 8, 4)] {
        let dir = tempfile::tempdir().unwrap();
        let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
        let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
        load(&master, 4, 16, 60, "a");
        setup(&replica, &master, mode, workers, domain_max);
        converge(&replica, &master);
        load(&master, 4, 16, 30, "b");
        converge(&replica, &master);
        assert_eq!(replica.get("/v1/checksums").1["tables"], master.get("/v1/checksums").1["tables"], "{mode}");
        assert_same_order_per_domain(&master, &replica);
        let c = connection(&replica);
        assert_eq!(c["transactions_applied"], 16 * 90, "{mode}: {c}");
        assert_eq!(c["last_error"], Json::Null, "{mode}");
        assert_eq!(replica.status()["gtid_slave_pos"], master.status()["gtid_binlog_pos"]);
    }
}

#[test]
fn a_diverged_row_stops_parallel_apply_with_the_row_named() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--domain-id", "9"]);
    load(&master, 2, 2, 5, "a");
    // Someone wrote on the replica: its hot counter of domain 1 no longer matches the master's before image.
    let mut c = replica.client();
    rt().block_on(c.increment("hot_1", "counter", "n", 100)).unwrap();
    load(&master, 2, 2, 5, "b");
    setup(&replica, &master, "optimistic", 4, 2);
    let conn = replica.eventually("the connection's error", || connection(&replica), |c| c["sql_state"] == "error");
    assert_eq!(conn["last_error"]["code"], "ROW_MISMATCH");
    assert!(conn["last_error"]["message"].as_str().unwrap().contains("hot_1/counter"), "{conn}");
}

#[test]
fn sigkill_during_parallel_apply_resumes_exactly_over_20_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let mut replica = NodeProc::start(&dir.path().join("r"), 2, &["--checkpoint-interval-ms", "20"]);
    setup(&replica, &master, "optimistic", 8, 4);
    for seed in 0..20u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        load(&master, 4, 8, 40, &format!("s{seed}"));
        std::thread::sleep(Duration::from_millis(rng.random_range(0..120)));
        replica.sigkill();
        replica.restart();
        converge(&replica, &master);
        assert_eq!(
            replica.get("/v1/checksums").1["tables"],
            master.get("/v1/checksums").1["tables"],
            "seed {seed}: the replica's data differs"
        );
        assert_same_order_per_domain(&master, &replica);
        assert_eq!(replica.status()["gtid_slave_pos"], master.status()["gtid_binlog_pos"], "seed {seed}");
    }
    // The append-only tables hold exactly one row per transaction: nothing was applied twice or lost.
    let sums = replica.get("/v1/checksums").1["tables"].clone();
    let log_rows: u64 = (0..4).map(|d| sums[format!("log_{d}")]["rows"].as_u64().unwrap()).sum();
    assert_eq!(log_rows, 20 * 8 * 40);
    assert!(replica.log().contains("replayed the binlog into the store"), "some kill landed between checkpoints");
}

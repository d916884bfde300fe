//! Parallel apply changed online (`POST /v1/replication/{name}/parallel`) on a real replica under write load:
//! the connection keeps receiving, each change reaches the SQL side between two batches, and at the end the
//! replica has every transaction exactly once, in each domain's order, with the master's data; refused values
//! change nothing; the change is saved with the connection.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::common::{assert_same_order_per_domain, rt, NodeProc, TOKEN};
use ferry_client::{Client, Txn};
use ferry_core::row::Value;
use serde_json::{json, Value as Json};

const DOMAINS: u32 = 3;
const CLIENTS: u32 = 6;

/// `CLIENTS` clients commit until `stop`: each an append-only row in `log_<domain>` and an increment of its
/// domain's hot counter (transactions of a domain conflict on it). Returns the acknowledged commits.
fn writer(listen: String, stop: Arc<AtomicBool>, acked: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        rt().block_on(async move {
            let tasks: Vec<_> = (0..CLIENTS)
                .map(|c| {
                    let (listen, stop, acked) = (listen.clone(), stop.clone(), acked.clone());
                    tokio::spawn(async move {
                        let mut client = Client::connect(&listen).await.unwrap();
                        let mut i: i64 = 0;
                        while !stop.load(Ordering::SeqCst) {
                            let d = (c + i as u32) % DOMAINS;
                            let row =
                                [("c".to_string(), Value::Int(i64::from(c))), ("i".to_string(), Value::Int(i))].into();
                            let txn = Txn::new()
                                .domain(d)
                                .put(&format!("log_{d}"), &format!("{c}-{i}"), row)
                                .increment(&format!("hot_{d}"), "counter", "n", 1);
                            client.transact(txn).await.unwrap();
                            acked.fetch_add(1, Ordering::SeqCst);
                            i += 1;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        })
    })
}

fn connection(replica: &NodeProc) -> Json {
    replica.get("/v1/replication").1["connections"][0].clone()
}

fn set_parallel(replica: &NodeProc, body: Json) -> (u16, Json) {
    replica.post("/v1/replication/m/parallel", body, Some(TOKEN))
}

#[test]
fn parallel_apply_changed_under_load_skips_and_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let mut replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    let (code, body) = replica.post("/v1/replication/m/change-master", json!({"master": master.listen}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let (code, body) = replica.post("/v1/replication/m/start", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");

    let (stop, acked) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let load = writer(master.listen.clone(), stop.clone(), acked.clone());
    let settings = [("optimistic", 8, 4), ("conservative", 4, 4), ("serial", 1, 1), ("optimistic", 16, 16)];
    for (round, (mode, workers, domain_max)) in settings.into_iter().enumerate() {
        // Some commits and some applied transactions between two changes.
        let applied = connection(&replica)["transactions_applied"].as_u64().unwrap();
        replica.eventually(
            "the replica to apply more transactions",
            || connection(&replica)["transactions_applied"].as_u64().unwrap(),
            |n| *n > applied + 300,
        );
        let wanted = json!({"mode": mode, "workers": workers, "domain_workers_max": domain_max});
        let (code, body) = set_parallel(&replica, wanted.clone());
        assert_eq!(code, 200, "round {round}: {body}");
        assert_eq!((body["running"].clone(), body["parallel"].clone()), (json!(true), wanted.clone()));
        let c = connection(&replica);
        assert_eq!(c["parallel"], wanted, "round {round}: the status shows the change");
        assert_eq!((c["running"].clone(), c["io_state"].clone()), (json!(true), json!("connected")), "{c}");
    }
    stop.store(true, Ordering::SeqCst);
    load.join().unwrap();

    let target = master.status()["gtid_binlog_pos"].as_str().unwrap().to_string();
    let (_, waited) =
        replica.post("/v1/wait-for-position", json!({"position": target, "timeout_ms": 60_000}), Some(TOKEN));
    assert_eq!(waited["reached"], true, "replica did not reach {target}: {}\n{}", replica.status(), replica.log());
    let c = connection(&replica);
    assert_eq!(c["reconnects"], 0, "the receiving side never stopped: {c}");
    assert_eq!(c["last_error"], Json::Null);
    let total = acked.load(Ordering::SeqCst);
    assert_eq!(c["transactions_applied"].as_u64().unwrap(), total, "every acknowledged commit applied once");
    assert_eq!(replica.get("/v1/checksums").1["tables"], master.get("/v1/checksums").1["tables"]);
    assert_same_order_per_domain(&master, &replica);
    let sums = replica.get("/v1/checksums").1["tables"].clone();
    let log_rows: u64 = (0..DOMAINS).map(|d| sums[format!("log_{d}")]["rows"].as_u64().unwrap()).sum();
    assert_eq!(log_rows, total, "one row per acknowledged commit");
    println!("{total} commits under load, parallel apply changed {} times", settings.len());
    assert!(replica.log().contains("parallel apply changed"), "the SQL side took the changes");

    // Saved with the connection: the node's restart keeps the last setting.
    replica.stop();
    replica.restart();
    assert_eq!(
        connection(&replica)["parallel"],
        json!({"mode": "optimistic", "workers": 16, "domain_workers_max": 16})
    );
}

#[test]
fn refused_parallel_settings_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &[]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &[]);
    let body = json!({"master": master.listen, "parallel_mode": "conservative", "workers": 4, "domain_workers_max": 2});
    assert_eq!(replica.post("/v1/replication/m/change-master", body, Some(TOKEN)).0, 200);
    let before = connection(&replica);
    let refused = [
        (json!({"mode": "optimistic", "workers": 0, "domain_workers_max": 1}), 400, "workers must be 1 to 256"),
        (json!({"mode": "optimistic", "workers": 257, "domain_workers_max": 1}), 400, "workers must be 1 to 256"),
        (json!({"mode": "optimistic", "workers": 4, "domain_workers_max": 5}), 400, "domain_workers_max 1 to workers"),
        (json!({"mode": "optimistic", "workers": 4, "domain_workers_max": 0}), 400, "domain_workers_max 1 to workers"),
        (json!({"mode": "aggressive", "workers": 4, "domain_workers_max": 4}), 400, "unknown variant"),
        (json!({"mode": "optimistic", "workers": 4}), 400, "domain_workers_max"),
        (json!({"mode": "optimistic", "workers": 4, "domain_workers_max": 4, "x": 1}), 400, "unknown field"),
        (json!({"mode": "optimistic", "workers": -1, "domain_workers_max": 4}), 400, "invalid"),
    ];
    for (body, status, why) in refused {
        let (code, answer) = set_parallel(&replica, body.clone());
        assert_eq!(code, status, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "bad_request", "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{body}: {message}");
    }
    let (code, answer) = replica.post(
        "/v1/replication/nope/parallel",
        json!({"mode": "serial", "workers": 1, "domain_workers_max": 1}),
        Some(TOKEN),
    );
    assert_eq!((code, answer["error"]["code"].clone()), (404, json!("not_found")), "{answer}");
    let (code, _) = replica.post(
        "/v1/replication/m/parallel",
        json!({"mode": "serial", "workers": 1, "domain_workers_max": 1}),
        Some("wrong-token-0123456789"),
    );
    assert_eq!(code, 401, "the token is checked first");
    assert_eq!(connection(&replica), before, "nothing changed");

    // A stopped connection takes the change too, keeping its other settings.
    let (code, body) = set_parallel(&replica, json!({"mode": "optimistic", "workers": 8, "domain_workers_max": 8}));
    assert_eq!((code, body["running"].clone()), (200, json!(false)), "{body}");
    let after = connection(&replica);
    assert_eq!(after["parallel"], json!({"mode": "optimistic", "workers": 8, "domain_workers_max": 8}));
    assert_eq!(
        (after["master"].clone(), after["heartbeat_ms"].clone()),
        (before["master"].clone(), before["heartbeat_ms"].clone())
    );
}

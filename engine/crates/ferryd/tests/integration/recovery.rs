//! Crash recovery of a real node: `ferryd` under concurrent writers is killed with SIGKILL at a random moment,
//! 20 times with different seeds, on one growing data directory (small binlog files and frequent checkpoints,
//! so kills land during rotations and checkpoints too). After each restart:
//! - every transaction a client saw acknowledged is there,
//! - no partial transaction is visible (each writer's counter equals the number of its log rows),
//! - GTIDs are strictly increasing per domain in the binlog, with no duplicate,
//! - the store equals a replay of the binlog (same rows, same checksums).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use crate::common::{rt, NodeProc};
use ferry_client::{Client, Txn};
use ferry_core::gtid::Gtid;
use ferry_core::row::{row_bytes, Row, Value};
use ferry_core::store::TableChecksum;
use rand::{Rng, SeedableRng};

const WRITERS: u32 = 6;
const DOMAINS: u32 = 3;
const SEEDS: u64 = 20;

fn int(row: &Row, field: &str) -> i64 {
    match row.get(field) {
        Some(Value::Int(n)) => *n,
        other => panic!("field {field} is {other:?}"),
    }
}

/// Writes until the connection breaks: each transaction bumps the writer's counter and adds one log row.
async fn writer(addr: String, w: u32, start: i64) -> Vec<(i64, Gtid)> {
    let mut acked = Vec::new();
    let Ok(mut c) = Client::connect(&addr).await else {
        return acked;
    };
    for n in start.. {
        let txn = Txn::new().domain(w % DOMAINS).increment("counters", &format!("w{w}"), "n", 1).put(
            "log",
            &format!("w{w}-{n:06}"),
            [("n".to_string(), Value::Int(n))].into(),
        );
        match c.transact(txn).await {
            Ok(commit) => acked.push((n, commit.gtid)),
            Err(_) => break,
        }
    }
    acked
}

#[test]
fn sigkill_under_concurrent_writers_loses_no_acknowledged_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--binlog-file-bytes-max", "65536", "--checkpoint-interval-ms", "30"];
    let mut node = NodeProc::start(dir.path(), 1, &args);
    let mut all_acked: HashMap<u32, Vec<(i64, Gtid)>> = HashMap::new();
    for seed in 0..SEEDS {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let kill_after = Duration::from_millis(rng.random_range(20..250));
        let mut c = node.client();
        let starts: Vec<i64> = (0..WRITERS)
            .map(|w| rt().block_on(c.get("counters", &format!("w{w}"))).unwrap().map_or(0, |r| int(&r, "n")))
            .collect();
        drop(c);
        let tasks: Vec<_> =
            (0..WRITERS).map(|w| rt().spawn(writer(node.listen.clone(), w, starts[w as usize]))).collect();
        std::thread::sleep(kill_after);
        node.sigkill();
        for (w, task) in tasks.into_iter().enumerate() {
            let acked = rt().block_on(task).unwrap();
            assert!(!acked.is_empty() || seed > 0, "writer {w} committed nothing before the kill (seed {seed})");
            all_acked.entry(w as u32).or_default().extend(acked);
        }
        node.restart();
        verify(&node, &all_acked, seed);
    }
    // The kills really landed between checkpoints: start-up had binlog to replay into the store.
    let log = node.log();
    assert!(log.contains("replayed the binlog into the store"), "no restart replayed anything:\n{log}");
    node.stop();
}

fn verify(node: &NodeProc, acked: &HashMap<u32, Vec<(i64, Gtid)>>, seed: u64) {
    let txns = node.binlog_transactions();

    // GTIDs strictly increasing per domain, none twice.
    let mut last: BTreeMap<u32, u64> = BTreeMap::new();
    let mut seen: HashSet<Gtid> = HashSet::new();
    for t in &txns {
        let g = t.gtid();
        assert!(seen.insert(g), "seed {seed}: GTID {g} appears twice");
        if let Some(prev) = last.insert(g.domain, g.seq) {
            assert!(g.seq > prev, "seed {seed}: domain {} goes from seq {prev} to {}", g.domain, g.seq);
        }
    }

    // Every acknowledged transaction is in the binlog.
    for (w, list) in acked {
        for (n, gtid) in list {
            assert!(
                seen.contains(gtid),
                "seed {seed}: acknowledged {gtid} (writer {w}, row {n}) is missing from the binlog"
            );
        }
    }

    // The store equals a replay of the binlog.
    let mut replay: BTreeMap<(String, String), Option<Row>> = BTreeMap::new();
    for t in &txns {
        for ch in &t.changes {
            replay.insert((ch.table.clone(), ch.key.clone()), ch.after.clone());
        }
    }
    let mut expected: BTreeMap<String, TableChecksum> = BTreeMap::new();
    for ((table, key), row) in &replay {
        if let Some(row) = row {
            expected.entry(table.clone()).or_default().add(key, &row_bytes(row));
        }
    }
    let (_, sums) = node.get("/v1/checksums");
    for (table, want) in &expected {
        assert_eq!(sums["tables"][table]["rows"], want.rows, "seed {seed}: row count of {table}");
        assert_eq!(sums["tables"][table]["checksum"], want.checksum, "seed {seed}: checksum of {table}");
    }

    // Every acknowledged write is visible, and no transaction is half there.
    let mut c = node.client();
    rt().block_on(async {
        for w in 0..WRITERS {
            let counter = c.get("counters", &format!("w{w}")).await.unwrap().map_or(0, |r| int(&r, "n"));
            let acked_rows = acked.get(&w).map_or(0, Vec::len) as i64;
            assert!(counter >= acked_rows, "seed {seed}: writer {w} counter {counter} < {acked_rows} acknowledged");
            let logged = replay.keys().filter(|(t, k)| t == "log" && k.starts_with(&format!("w{w}-"))).count() as i64;
            assert_eq!(
                counter, logged,
                "seed {seed}: writer {w}: counter and log rows disagree (a partial transaction)"
            );
            if let Some((n, _)) = acked.get(&w).and_then(|l| l.last()) {
                let row = c.get("log", &format!("w{w}-{n:06}")).await.unwrap();
                assert!(row.is_some(), "seed {seed}: acknowledged row w{w}-{n} is not visible");
            }
        }
    });
}

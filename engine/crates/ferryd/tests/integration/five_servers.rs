//! The five-server two-master shape (docs/background.md: the multi-source example), on real
//! nodes: servers 1 and 2 are masters of domains 1 and 2; server 3 replicates from both and is the master of
//! servers 4 and 5. Each domain keeps its order everywhere while the interleaving of the domains differs from
//! server to server; a replica moves to another master by GTID with no duplicate and no gap; and after both
//! masters stop, server 5 is brought level with server 4 by START UNTIL, promoted, and everyone follows it.

use std::collections::{BTreeMap, HashSet};

use crate::common::{rt, NodeProc, TOKEN};
use ferry_client::{Client, Txn};
use ferry_core::gtid::Gtid;
use serde_json::{json, Value};

fn post_ok(node: &NodeProc, path: &str, body: Value) -> Value {
    let (code, resp) = node.post(path, body, Some(TOKEN));
    assert_eq!(code, 200, "POST {path} on server {}: {resp}", node.server_id);
    resp
}

fn replicate(replica: &NodeProc, name: &str, master: &NodeProc, extra: Value) {
    let mut body = json!({"master": master.listen});
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    post_ok(replica, &format!("/v1/replication/{name}/change-master"), body);
    post_ok(replica, &format!("/v1/replication/{name}/start"), json!({}));
}

fn binlog_pos(node: &NodeProc) -> String {
    node.status()["gtid_binlog_pos"].as_str().unwrap().to_string()
}

fn wait_for(node: &NodeProc, position: &str) {
    let (_, body) =
        node.post("/v1/wait-for-position", json!({"position": position, "timeout_ms": 60_000}), Some(TOKEN));
    assert_eq!(
        body["reached"],
        true,
        "server {} did not reach {position}: {}\n{}",
        node.server_id,
        node.status(),
        node.log()
    );
}

/// Concurrent writers on both masters: server 1 writes table `a` in domain 1, server 2 table `b` in domain 2.
fn write_both(s1: &NodeProc, s2: &NodeProc, per_writer: usize) {
    let targets = [(s1.listen.clone(), "a"), (s2.listen.clone(), "b")];
    rt().block_on(async move {
        let mut tasks = Vec::new();
        for (addr, table) in targets {
            for w in 0..4 {
                let addr = addr.clone();
                tasks.push(tokio::spawn(async move {
                    let mut c = Client::connect(&addr).await.unwrap();
                    for i in 0..per_writer {
                        c.transact(Txn::new().increment(table, &format!("k{}", (w * 7 + i) % 11), "n", 1))
                            .await
                            .unwrap();
                    }
                }));
            }
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

/// Each domain's own sequence, checked to be in order with no duplicate and no gap.
fn streams(node: &NodeProc) -> BTreeMap<u32, Vec<Gtid>> {
    let mut by_domain: BTreeMap<u32, Vec<Gtid>> = BTreeMap::new();
    let mut seen = HashSet::new();
    for g in node.binlog_gtids() {
        assert!(seen.insert(g), "server {}: {g} twice in the binlog", node.server_id);
        by_domain.entry(g.domain).or_default().push(g);
    }
    for (domain, gtids) in &by_domain {
        for pair in gtids.windows(2) {
            assert_eq!(
                pair[1].seq,
                pair[0].seq + 1,
                "server {}: domain {domain} jumps {} -> {}",
                node.server_id,
                pair[0],
                pair[1]
            );
        }
    }
    by_domain
}

/// The order in which the domains alternate in a binlog.
fn interleaving(node: &NodeProc) -> Vec<u32> {
    node.binlog_gtids().into_iter().map(|g| g.domain).collect()
}

fn table_sums(node: &NodeProc) -> Value {
    node.get("/v1/checksums").1["tables"].clone()
}

#[test]
fn the_five_server_scenario_of_the_gtid_design() {
    let dir = tempfile::tempdir().unwrap();
    let mut s1 = NodeProc::start(&dir.path().join("s1"), 1, &["--domain-id", "1"]);
    let mut s2 = NodeProc::start(&dir.path().join("s2"), 2, &["--domain-id", "2"]);
    let s3 = NodeProc::start(&dir.path().join("s3"), 3, &["--domain-id", "3"]);
    let s4 = NodeProc::start(&dir.path().join("s4"), 4, &["--domain-id", "4"]);
    let s5 = NodeProc::start(&dir.path().join("s5"), 5, &["--domain-id", "5"]);
    let parallel = json!({"parallel_mode": "optimistic", "workers": 4, "domain_workers_max": 2});

    // Server 3 replicates from both masters (multi-source); 4 and 5 from 3, applying in parallel.
    replicate(&s3, "s1", &s1, json!({}));
    replicate(&s3, "s2", &s2, json!({}));
    replicate(&s4, "s3", &s3, parallel.clone());
    replicate(&s5, "s3", &s3, parallel.clone());
    write_both(&s1, &s2, 60);
    let target = format!("{},{}", binlog_pos(&s1), binlog_pos(&s2));
    for s in [&s3, &s4, &s5] {
        wait_for(s, &target);
    }

    // Equal data everywhere it is replicated; each domain in order; the interleavings differ.
    let (sums3, sums4, sums5) = (table_sums(&s3), table_sums(&s4), table_sums(&s5));
    assert_eq!(sums3, sums4);
    assert_eq!(sums3, sums5);
    assert_eq!(sums3["a"], table_sums(&s1)["a"]);
    assert_eq!(sums3["b"], table_sums(&s2)["b"]);
    let (st1, st2) = (streams(&s1), streams(&s2));
    for s in [&s3, &s4, &s5] {
        let st = streams(s);
        assert_eq!(st[&1], st1[&1], "server {}: domain 1 in server 1's order", s.server_id);
        assert_eq!(st[&2], st2[&2], "server {}: domain 2 in server 2's order", s.server_id);
    }
    let (i3, i4, i5) = (interleaving(&s3), interleaving(&s4), interleaving(&s5));
    assert!(i3 != i4 || i3 != i5 || i4 != i5, "the three servers interleave domains 1 and 2 identically");

    // Server 5 stops behind server 4, then moves under server 4 by GTID: no duplicate, no gap.
    post_ok(&s5, "/v1/replication/s3/stop", json!({}));
    write_both(&s1, &s2, 20);
    let target = format!("{},{}", binlog_pos(&s1), binlog_pos(&s2));
    wait_for(&s4, &target);
    assert!(!binlog_pos(&s5).is_empty() && binlog_pos(&s5) != binlog_pos(&s4), "server 5 is behind server 4");
    assert_eq!(s5.delete_req("/v1/replication/s3").0, 200);
    replicate(&s5, "s4", &s4, parallel.clone());
    wait_for(&s5, &target);
    streams(&s5);
    assert_eq!(table_sums(&s5), table_sums(&s4));

    // Server 5 falls behind again; both masters stop; server 5 is brought level with server 4 by START UNTIL.
    post_ok(&s5, "/v1/replication/s4/stop", json!({}));
    write_both(&s1, &s2, 20);
    let target = format!("{},{}", binlog_pos(&s1), binlog_pos(&s2));
    wait_for(&s4, &target);
    s1.stop();
    s2.stop();
    let level = binlog_pos(&s4);
    post_ok(&s5, "/v1/replication/s4/start", json!({"until": level}));
    wait_for(&s5, &level);
    assert_eq!(binlog_pos(&s5), level, "exactly level, nothing more");

    // Promote server 5: servers 3 and 4 follow it, and its writes reach everyone.
    for (server, old) in [(&s3, "s1"), (&s3, "s2"), (&s4, "s3"), (&s5, "s4")] {
        let (code, resp) = server.delete_req(&format!("/v1/replication/{old}"));
        assert_eq!(code, 200, "{resp}");
    }
    replicate(&s3, "s5", &s5, json!({}));
    replicate(&s4, "s5", &s5, parallel);
    let mut c = s5.client();
    rt().block_on(async {
        for i in 0..10 {
            c.transact(Txn::new().domain(1).increment("a", &format!("k{i}"), "n", 1)).await.unwrap();
            c.transact(Txn::new().domain(2).increment("b", &format!("k{i}"), "n", 1)).await.unwrap();
        }
    });
    let final_pos = binlog_pos(&s5);
    assert!(
        final_pos.contains("1-5-") && final_pos.contains("2-5-"),
        "server 5 continues domains 1 and 2: {final_pos}"
    );
    wait_for(&s3, &final_pos);
    wait_for(&s4, &final_pos);
    assert_eq!(table_sums(&s3), table_sums(&s5));
    assert_eq!(table_sums(&s4), table_sums(&s5));
    for s in [&s3, &s4, &s5] {
        streams(s);
    }
}

//! Rewind on real nodes: an old master holding writes only it has (its replica stopped, more writes on it) is
//! rewound to the replica's position through `POST /v1/rewind` — its binlog ends there, its checksums equal the
//! replica's, the archive it serves holds exactly the cut transactions, and a restart keeps it so — and every
//! refusal, each changing nothing.

use crate::common::{post_ok, replicate_with, rt, start_with_consumers, NodeProc, CONSUMER_TOKEN, TOKEN};
use ferry_client::{SubscribeOptions, Subscription, Txn};
use ferry_core::gtid::Gtid;
use ferry_core::row::Value;
use serde_json::{json, Value as Json};

/// Writes in domains 0 and 1 (and, with `extra`, changes of every kind and a new table in domain 2).
fn write(node: &NodeProc, round: i64, extra: bool) {
    let mut c = node.client();
    rt().block_on(async {
        for i in 0..4 {
            let key = format!("k{i}");
            c.transact(Txn::new().domain(0).put("a", &key, [("n".to_string(), Value::Int(round + i))].into()))
                .await
                .unwrap();
            c.transact(Txn::new().domain(1).increment("b", &key, "n", round)).await.unwrap();
        }
        if extra {
            c.transact(Txn::new().domain(0).delete("a", "k1")).await.unwrap();
            c.transact(Txn::new().domain(1).put("b", "new", [("s".to_string(), Value::Text("x".into()))].into()))
                .await
                .unwrap();
            c.transact(Txn::new().domain(2).increment("c", "only-here", "n", 1)).await.unwrap();
        }
    });
}

fn checksums(node: &NodeProc) -> Json {
    let (code, body) = node.get("/v1/checksums");
    assert_eq!(code, 200, "{body}");
    body
}

fn rewind(node: &NodeProc, body: Json) -> (u16, Json) {
    node.post("/v1/rewind", body, Some(TOKEN))
}

fn position(node: &NodeProc) -> String {
    node.status()["gtid_binlog_pos"].as_str().unwrap().to_string()
}

/// A master and its replica, level; then the replica stopped and writes only the master has.
fn diverged(dir: &std::path::Path) -> (NodeProc, NodeProc) {
    diverged_with(dir, &[])
}

/// [`diverged`], the master started with `extra`.
fn diverged_with(dir: &std::path::Path, extra: &[&str]) -> (NodeProc, NodeProc) {
    let master = NodeProc::start(&dir.join("m"), 1, extra);
    let replica = NodeProc::start(&dir.join("r"), 2, &[]);
    write(&master, 1, false);
    replicate_with(&replica, "m1", &master, "slave_pos");
    let level = position(&master);
    replica.eventually(
        "the replica applied the master's position",
        || replica.status()["gtid_slave_pos"].as_str().unwrap().to_string(),
        |p| *p == level,
    );
    post_ok(&replica, "/v1/replication/m1/stop", json!({}));
    master.eventually("the replica's dump stream ended", || master.status()["replicas"].clone(), |r| r == &json!([]));
    write(&master, 100, true);
    (master, replica)
}

#[test]
fn an_old_master_is_rewound_to_its_replicas_position_and_stays_so_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (mut master, replica) = diverged(dir.path());
    let target = replica.status()["gtid_slave_pos"].as_str().unwrap().to_string();
    let replica_sums = checksums(&replica);
    assert_eq!(replica_sums["position"], target);
    post_ok(&master, "/v1/read-only", json!({"read_only": true}));
    let before_gtids = master.binlog_gtids();
    let before_sums = checksums(&master);
    let expected_cut: Vec<String> = before_gtids
        .iter()
        .filter(|g| {
            !target
                .split(',')
                .any(|t| t.parse::<Gtid>().unwrap().domain == g.domain && t.parse::<Gtid>().unwrap().seq >= g.seq)
        })
        .map(Gtid::to_string)
        .collect();
    assert_eq!(expected_cut.len(), 11, "{before_gtids:?}");

    let dry = post_ok(&master, "/v1/rewind", json!({"to": target, "dry_run": true}));
    let listed: Vec<String> =
        dry["cut"].as_array().unwrap().iter().map(|t| t["gtid"].as_str().unwrap().to_string()).collect();
    assert_eq!(listed, expected_cut);
    assert_eq!(dry["archive"], Json::Null);
    assert!(dry["cut"][10]["tables"] == json!(["c"]) && dry["cut"][10]["rows"] == 1, "{dry}");
    assert_eq!(checksums(&master), before_sums, "a dry run changes nothing");
    assert_eq!(master.binlog_gtids(), before_gtids);

    let done = post_ok(&master, "/v1/rewind", json!({"to": target}));
    assert_eq!(done["cut"], dry["cut"]);
    assert_eq!(done["by_replay"], false, "put back from the before images");
    let archive = done["archive"].as_str().unwrap().to_string();
    assert_eq!(position(&master), target, "gtid_binlog_pos is the replica's position");
    assert_eq!(done["gtid_binlog_state"], master.status()["gtid_binlog_state"]);
    let kept = master.binlog_gtids();
    assert_eq!(kept[..], before_gtids[..before_gtids.len() - expected_cut.len()], "the binlog ends at the position");
    assert_eq!(checksums(&master), replica_sums, "the store equals the replica's");

    // The archive: listed, downloadable, a binlog file holding exactly the cut transactions.
    let (code, listing) = master.get("/v1/rewind/archives");
    assert_eq!(code, 200);
    assert_eq!(listing["archives"], json!([archive]));
    let (code, bytes) = master.get_bytes(&format!("/v1/rewind/archives/{archive}"));
    assert_eq!(code, 200);
    let file = dir.path().join("downloaded.bin");
    std::fs::write(&file, bytes).unwrap();
    let (list, txns) = ferry_core::binlog::rewind::read_archive(&ferry_core::vfs::RealFs, &file).unwrap();
    assert_eq!(txns.iter().map(|t| t.gtid().to_string()).collect::<Vec<_>>(), expected_cut);
    assert_eq!(ferry_core::gtid::BinlogState::from_gtids(list).position().to_string(), target);

    master.stop();
    master.restart();
    assert_eq!(position(&master), target, "a restart keeps the rewind");
    assert_eq!(checksums(&master), replica_sums);
    assert_eq!(master.binlog_gtids(), kept);
    let (_, listing) = master.get("/v1/rewind/archives");
    assert_eq!(listing["archives"], json!([archive]));
}

/// A master logging no before images (`--binlog-row-image minimal`): its store is put back by replaying its
/// whole binlog up to the position.
#[test]
fn an_old_master_without_before_images_is_rewound_by_replay() {
    let dir = tempfile::tempdir().unwrap();
    let (mut master, replica) = diverged_with(dir.path(), &["--binlog-row-image", "minimal"]);
    let target = replica.status()["gtid_slave_pos"].as_str().unwrap().to_string();
    post_ok(&master, "/v1/read-only", json!({"read_only": true}));
    let done = post_ok(&master, "/v1/rewind", json!({"to": target}));
    assert_eq!(done["by_replay"], true, "{done}");
    assert_eq!(done["cut"].as_array().unwrap().len(), 11);
    assert_eq!(position(&master), target);
    assert_eq!(checksums(&master), checksums(&replica));
    master.stop();
    master.restart();
    assert_eq!(checksums(&master), checksums(&replica), "a restart keeps it");
}

#[test]
fn each_refusal_is_precise_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (master, replica) = diverged(dir.path());
    let target = replica.status()["gtid_slave_pos"].as_str().unwrap().to_string();
    let before = (master.binlog_gtids(), checksums(&master));
    let refused = |node: &NodeProc, body: Json, status: u16, code: &str, words: &[&str]| {
        let (got, answer) = rewind(node, body.clone());
        assert_eq!(got, status, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        for w in words {
            assert!(message.contains(w), "{message:?} names {w:?}");
        }
    };
    refused(&master, json!({"to": target}), 409, "not_quiesced", &["read-only"]);
    post_ok(&master, "/v1/read-only", json!({"read_only": true}));
    refused(&master, json!({"to": "0-1-x"}), 400, "bad_request", &["to is not a GTID position"]);
    refused(&master, json!({"to": target, "dryrun": true}), 400, "bad_request", &["dryrun"]);
    refused(&master, json!({}), 400, "bad_request", &["to"]);
    refused(&master, json!({"to": "0-1-999,1-1-4"}), 409, "cannot_rewind", &["ahead", "0-1-999"]);
    refused(&master, json!({"to": "0-7-4,1-1-4"}), 409, "cannot_rewind", &["0-7-4", "diverged"]);
    // Domain 2 kept whole: its only transaction follows cut ones of domains 0 and 1.
    let first_cut = master.binlog_gtids()[8];
    refused(
        &master,
        json!({"to": format!("{target},2-1-1")}),
        409,
        "cannot_rewind",
        &["2-1-1 is kept but follows", &first_cut.to_string()],
    );

    // A replica streaming from the master: refused while it streams.
    replicate_with(&replica, "m1", &master, "slave_pos");
    master.eventually("the replica connected", || master.status()["replicas"].clone(), |r| r != &json!([]));
    refused(&master, json!({"to": target, "dry_run": true}), 409, "replicas_connected", &["server_id 2"]);
    // ...and the replica, whose connection runs.
    post_ok(&replica, "/v1/read-only", json!({"read_only": true}));
    refused(&replica, json!({"to": target}), 409, "replication_running", &["\"m1\""]);

    let (code, answer) = master.get_bytes("/v1/rewind/archives/..%2Fstore.redb");
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&answer));
    let (code, _) = master.get_bytes("/v1/rewind/archives/rewind-ferry-bin.000001-4-1.bin");
    assert_eq!(code, 404);
    let answer = master.get_as("/v1/rewind/archives", None);
    assert_eq!(answer.status, 401);
    let (code, _) = master.post("/v1/rewind", json!({"to": target}), None);
    assert_eq!(code, 401);

    assert_eq!((master.binlog_gtids(), checksums(&master)), before, "nothing changed");
    let (_, listing) = master.get("/v1/rewind/archives");
    assert_eq!(listing["archives"], json!([]), "nothing archived");
}

#[test]
fn a_change_consumer_streaming_from_the_node_is_refused_while_it_streams() {
    let dir = tempfile::tempdir().unwrap();
    let node = start_with_consumers(dir.path(), 1, &[]);
    write(&node, 1, false);
    post_ok(&node, "/v1/read-only", json!({"read_only": true}));
    let mut options = SubscribeOptions::new("audit", CONSUMER_TOKEN);
    options.start = Some("".parse().unwrap());
    let subscription = rt().block_on(Subscription::open(&node.listen, &options)).unwrap();
    node.eventually("the consumer is listed", || node.get("/v1/consumers").1["consumers"].clone(), |c| c != &json!([]));
    let (code, answer) = rewind(&node, json!({"to": "0-1-1,1-1-1", "dry_run": true}));
    assert_eq!(code, 409, "{answer}");
    assert_eq!(answer["error"]["code"], "consumers_connected");
    assert!(answer["error"]["message"].as_str().unwrap().contains("\"audit\""), "{answer}");
    drop(subscription);
    node.eventually("the consumer is gone", || node.get("/v1/consumers").1["consumers"].clone(), |c| c == &json!([]));
    let dry = post_ok(&node, "/v1/rewind", json!({"to": "0-1-1,1-1-1", "dry_run": true}));
    assert_eq!(dry["cut"].as_array().unwrap().len(), 6);
}

//! Clone on real nodes: a recipient rebuilt from a donor (a replica of a master under write load) through
//! `/v1/clone` — equal checksums, then replication from the clone's position missing and repeating nothing;
//! cancel half-way leaves the node marked (read-only, refusing writes, leaving read-only and starting
//! replication, across a restart) and a resume continues the same snapshot; pause holds the copy still; a
//! hostile donor (a bad chunk checksum, a truncated stream, nonsense) fails the clone precisely.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::common::{post_ok, replicate_with, rt, NodeProc, TOKEN};
use ferry_client::Txn;
use ferry_core::protocol::{CloneTable, Request, Response};
use ferry_core::row::Value;
use serde_json::{json, Value as Json};

/// Rows enough for a throttled copy to be caught half-way: about 60 KB of chunk bytes.
const ROWS: i64 = 600;

fn fill(node: &NodeProc) {
    let mut c = node.client();
    rt().block_on(async {
        for batch in 0..ROWS / 50 {
            let mut txn = Txn::new();
            for i in batch * 50..(batch + 1) * 50 {
                let row = [("n".to_string(), Value::Int(i)), ("s".to_string(), Value::Text("x".repeat(60)))].into();
                txn = txn.put("t", &format!("k{i:05}"), row);
            }
            c.transact(txn).await.unwrap();
        }
    });
}

/// The seq_no of a one-domain position (`0-1-42` → 42).
fn seq_no(position: &str) -> i64 {
    position.rsplit('-').next().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn position(node: &NodeProc) -> String {
    node.status()["gtid_binlog_pos"].as_str().unwrap().to_string()
}

/// The non-empty tables' checksums.
fn tables(node: &NodeProc) -> Json {
    let (code, body) = node.get("/v1/checksums");
    assert_eq!(code, 200, "{body}");
    let mut out = serde_json::Map::new();
    for (name, sum) in body["tables"].as_object().unwrap() {
        if sum["rows"].as_u64() != Some(0) {
            out.insert(name.clone(), sum.clone());
        }
    }
    Json::Object(out)
}

fn view(node: &NodeProc) -> Json {
    let (code, body) = node.get("/v1/clone");
    assert_eq!(code, 200, "{body}");
    body
}

fn wait_state(node: &NodeProc, state: &str) -> Json {
    node.eventually(&format!("the clone's state {state}"), || view(node), |v| v["state"] == state)
}

/// A master with rows, and a donor replicating it, level.
fn master_and_donor(dir: &std::path::Path) -> (NodeProc, NodeProc) {
    master_and_donor_with(dir, &[])
}

/// [`master_and_donor`], the donor started with `extra`.
fn master_and_donor_with(dir: &std::path::Path, extra: &[&str]) -> (NodeProc, NodeProc) {
    let master = NodeProc::start(&dir.join("m"), 1, &[]);
    let donor = NodeProc::start(&dir.join("d"), 2, extra);
    fill(&master);
    replicate_with(&donor, "m", &master, "slave_pos");
    let level = position(&master);
    donor.eventually("the donor applied the master's rows", || position(&donor), |p| *p == level);
    (master, donor)
}

fn recipient(dir: &std::path::Path) -> NodeProc {
    NodeProc::start(&dir.join("r"), 3, &["--read-only", "--clone-chunk-bytes", "2048"])
}

#[test]
fn a_clone_under_writes_then_replication_from_its_position_equals_the_master() {
    let dir = tempfile::tempdir().unwrap();
    let (master, donor) = master_and_donor(dir.path());
    let r = recipient(dir.path());
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (stop, mut c) = (stop.clone(), master.client());
        std::thread::spawn(move || {
            rt().block_on(async {
                let mut n = 0i64;
                while !stop.load(Ordering::SeqCst) {
                    let key = format!("k{:05}", n % ROWS);
                    c.transact(Txn::new().increment("t", &key, "n", 1).increment("counts", "all", "n", 1))
                        .await
                        .unwrap();
                    n += 1;
                }
                n
            })
        })
    };
    let filled = ROWS / 50;
    master.eventually("the write load runs", || position(&master), |p| seq_no(p) > filled + 5);
    let started = post_ok(&r, "/v1/clone", json!({"donor": donor.listen}));
    assert_eq!(started["state"], "copying", "{started}");
    let done = wait_state(&r, "done");
    assert_eq!(done["bytes_done"], done["bytes_total"], "{done}");
    assert_eq!(done["resumed_bytes"], 0, "{done}");
    let at = done["position"].as_str().unwrap().to_string();
    let status = r.status();
    assert_eq!(status["gtid_slave_pos"], at, "gtid_slave_pos is the clone's position");
    assert_eq!(status["gtid_binlog_pos"], at, "the binlog's GTID state is the clone's position");
    assert_eq!(status["clone_incomplete"], Json::Null);
    assert_eq!(status["read_only"], true, "the clone leaves the node read-only");
    assert!(r.binlog_gtids().is_empty(), "the binlog holds no transaction");

    stop.store(true, Ordering::SeqCst);
    let written = load.join().unwrap();
    assert!(written > 0);
    replicate_with(&r, "m", &master, "slave_pos");
    let end = position(&master);
    r.eventually("the clone replicated up to the master's position", || position(&r), |p| *p == end);
    assert_eq!(tables(&r), tables(&master), "no transaction missing or applied twice");
    let counted = tables(&master);
    assert_eq!(counted["counts"]["rows"], 1);
}

#[test]
fn a_cancelled_clone_leaves_the_node_marked_and_a_resume_continues_the_same_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (_master, donor) = master_and_donor(dir.path());
    let mut r = recipient(dir.path());
    post_ok(&r, "/v1/clone", json!({"donor": donor.listen, "throttle_mb_s": 0.02}));
    r.eventually("the clone copied some bytes", || view(&r), |v| v["bytes_done"].as_u64() > Some(0));
    let (code, cancelled) = r.delete_req("/v1/clone");
    assert_eq!(code, 200, "{cancelled}");
    assert_eq!(cancelled["state"], "cancelled");
    let copied = cancelled["bytes_done"].as_u64().unwrap();
    assert!(copied < cancelled["bytes_total"].as_u64().unwrap(), "cancelled half-way: {cancelled}");
    for _ in 0..2 {
        refuses_while_marked(&r, &donor);
        r.stop();
        r.restart();
        assert_eq!(view(&r)["state"], "cancelled", "the cancel survives the restart");
    }
    refuses_while_marked(&r, &donor);

    let resumed = post_ok(&r, "/v1/clone", json!({"donor": donor.listen, "resume": true}));
    assert_eq!(resumed["state"], "copying");
    let done = wait_state(&r, "done");
    assert!(
        done["resumed_bytes"].as_u64().unwrap() > 0,
        "the resume kept what was copied: {done}\n{}\nDONOR\n{}",
        r.log(),
        donor.log()
    );
    assert_eq!(done["bytes_done"], done["bytes_total"]);
    assert_eq!(tables(&r), tables(&donor));
    assert_eq!(r.status()["clone_incomplete"], Json::Null);
    let metrics = r.get_text("/metrics");
    assert!(metrics.contains("\nferry_clone_incomplete 0\n") && metrics.contains("\nferry_clone_copying 0\n"));
    let (code, _) = r.post("/v1/read-only", json!({"read_only": false}), Some(TOKEN));
    assert_eq!(code, 200, "a completed clone clears the mark");
}

/// The recipient's staging store is durable every `--clone-durable-bytes` of rows: killed between two durable
/// points, the node (restarted) shows the copy failed, and a resume continues from the last durable point — it
/// keeps bytes, copies the rest, and ends equal to the donor.
#[test]
fn a_resume_after_a_crash_continues_from_the_last_durable_point() {
    let dir = tempfile::tempdir().unwrap();
    let (_master, donor) = master_and_donor(dir.path());
    let extra = ["--read-only", "--clone-chunk-bytes", "2048", "--clone-durable-bytes", "8192"];
    let mut r = NodeProc::start(&dir.path().join("r"), 3, &extra);
    post_ok(&r, "/v1/clone", json!({"donor": donor.listen, "throttle_mb_s": 0.02}));
    r.eventually("the clone copied past two durable points", || view(&r), |v| v["bytes_done"].as_u64() > Some(20_000));
    r.sigkill();
    r.restart();
    let shown = view(&r);
    assert_eq!(shown["state"], "failed", "{shown}");
    assert!(!r.status()["clone_incomplete"].is_null(), "the node stays marked: {shown}");
    let resumed = post_ok(&r, "/v1/clone", json!({"donor": donor.listen, "resume": true}));
    assert_eq!(resumed["state"], "copying");
    let done = wait_state(&r, "done");
    let kept = done["resumed_bytes"].as_u64().unwrap();
    assert!(
        kept >= 8192 && kept < done["bytes_total"].as_u64().unwrap(),
        "the resume continued from a durable point past the first: {done}\n{}",
        r.log()
    );
    assert_eq!(done["bytes_done"], done["bytes_total"]);
    assert_eq!(tables(&r), tables(&donor));
    assert_eq!(r.status()["clone_incomplete"], Json::Null);
}

#[test]
fn a_resume_the_donor_no_longer_holds_starts_over_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (_master, donor) = master_and_donor_with(dir.path(), &["--clone-retention-s", "0"]);
    let r = recipient(dir.path());
    post_ok(&r, "/v1/clone", json!({"donor": donor.listen, "throttle_mb_s": 0.02}));
    r.eventually("the clone copied some bytes", || view(&r), |v| v["bytes_done"].as_u64() > Some(0));
    let (code, _) = r.delete_req("/v1/clone");
    assert_eq!(code, 200);
    post_ok(&r, "/v1/clone", json!({"donor": donor.listen, "resume": true}));
    let done = wait_state(&r, "done");
    assert_eq!(done["resumed_bytes"], 0, "the snapshot was gone: the copy started over: {done}");
    assert_eq!(done["bytes_done"], done["bytes_total"]);
    assert_eq!(tables(&r), tables(&donor));
}

#[test]
fn a_donor_holds_at_most_its_bound_of_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let (_master, donor) = master_and_donor_with(dir.path(), &["--clone-snapshots-max", "1"]);
    let first = recipient(dir.path());
    let second = NodeProc::start(&dir.path().join("r2"), 4, &["--read-only", "--clone-chunk-bytes", "2048"]);
    post_ok(&first, "/v1/clone", json!({"donor": donor.listen, "throttle_mb_s": 0.02}));
    first.eventually("the first clone copied some bytes", || view(&first), |v| v["bytes_done"].as_u64() > Some(0));
    post_ok(&second, "/v1/clone", json!({"donor": donor.listen}));
    let failed = wait_state(&second, "failed");
    assert!(failed["error"].as_str().unwrap().contains("--clone-snapshots-max"), "{failed}");
    let (code, _) = first.patch("/v1/clone", json!({"throttle_mb_s": null}));
    assert_eq!(code, 200);
    wait_state(&first, "done");
    // The first clone's snapshot waits for a resume now, idle: a new clone evicts it.
    post_ok(&second, "/v1/clone", json!({"donor": donor.listen}));
    wait_state(&second, "done");
    assert_eq!(tables(&second), tables(&donor));
}

/// The node is marked: read-only, refusing client writes, leaving read-only and starting replication, each
/// naming the clone; a resume from another donor is refused too.
fn refuses_while_marked(r: &NodeProc, donor: &NodeProc) {
    let status = r.status();
    assert_eq!(status["clone_incomplete"]["state"], "cancelled", "{status}");
    assert!(r.get_text("/metrics").contains("\nferry_clone_incomplete 1\n"), "the metric says it too");
    assert_eq!(status["read_only"], true);
    let clone_id = status["clone_incomplete"]["clone_id"].as_str().unwrap().to_string();
    let (code, body) = r.post("/v1/read-only", json!({"read_only": false}), Some(TOKEN));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("clone_incomplete")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains(&clone_id), "{body}");
    post_ok(r, "/v1/replication/d/change-master", json!({"master": donor.listen, "use_gtid": "slave_pos"}));
    let (code, body) = r.post("/v1/replication/d/start", json!({}), Some(TOKEN));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("clone_incomplete")), "{body}");
    let (code, _) = r.delete_req("/v1/replication/d");
    assert_eq!(code, 200);
    let mut c = r.client();
    let err = rt().block_on(c.transact(Txn::new().increment("t", "x", "n", 1))).unwrap_err();
    assert!(err.to_string().contains(&clone_id), "{err}");
    let (code, body) = r.post("/v1/clone", json!({"donor": "127.0.0.1:1", "resume": true}), Some(TOKEN));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("other_donor")), "{body}");
}

#[test]
fn a_paused_clone_takes_no_bytes_until_it_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (_master, donor) = master_and_donor(dir.path());
    let r = recipient(dir.path());
    post_ok(&r, "/v1/clone", json!({"donor": donor.listen, "throttle_mb_s": 0.02}));
    r.eventually("the clone copied some bytes", || view(&r), |v| v["bytes_done"].as_u64() > Some(0));
    let (code, body) = r.patch("/v1/clone", json!({"paused": true}));
    assert_eq!(code, 200, "{body}");
    let paused = r.eventually("the copy stopped for the pause", || view(&r), |v| v["paused"] == true);
    for _ in 0..30 {
        let now = view(&r);
        assert_eq!(now["bytes_done"], paused["bytes_done"], "no byte taken while paused");
        assert_eq!(now["state"], "copying");
    }
    let (code, body) = r.patch("/v1/clone", json!({"paused": false, "throttle_mb_s": null}));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["throttle_mb_s"], Json::Null);
    wait_state(&r, "done");
    assert_eq!(tables(&r), tables(&donor));
    let (code, body) = r.patch("/v1/clone", json!({"paused": true}));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("no_clone_copying")), "{body}");
}

#[test]
fn bad_requests_and_a_node_not_quiesced_are_refused_changing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let writable = NodeProc::start(&dir.path().join("w"), 4, &[]);
    let (code, body) = writable.post("/v1/clone", json!({"donor": "127.0.0.1:9"}), Some(TOKEN));
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("not_quiesced")), "{body}");
    for (bad, says) in [
        (json!({"donor": "nowhere"}), "host:port"),
        (json!({"donor": "127.0.0.1:9", "throttle_mb_s": 0}), "throttle_mb_s"),
        (json!({"donor": "127.0.0.1:9", "extra": 1}), "unknown field"),
    ] {
        let (code, body) = writable.post("/v1/clone", bad.clone(), Some(TOKEN));
        assert_eq!(code, 400, "{bad} → {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains(says), "{bad} → {body}");
    }
    assert_eq!(view(&writable)["state"], "idle");
    assert_eq!(writable.status()["clone_incomplete"], Json::Null);
    let (code, body) = writable.delete_req("/v1/clone");
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("no_clone_copying")), "{body}");
}

/// A donor that authenticates anyone and answers a clone request with `answer` (frames, given the request id),
/// then closes the connection.
fn hostile_donor(answer: impl Fn(u32, &str) -> Vec<u8> + Send + 'static) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        loop {
            let mut len = [0u8; 4];
            if s.read_exact(&mut len).is_err() {
                return;
            }
            let mut frame = vec![0u8; u32::from_le_bytes(len) as usize];
            s.read_exact(&mut frame).unwrap();
            let (header, req) = Request::decode(&frame).unwrap();
            let reply = match &req {
                Request::Auth { .. } => Response::AuthOk.encode(header.request_id),
                Request::Clone { clone_id, .. } => answer(header.request_id, clone_id),
                other => panic!("a clone asks for no {other:?}"),
            };
            s.write_all(&reply).unwrap();
            if matches!(req, Request::Clone { .. }) {
                return;
            }
        }
    });
    addr
}

/// What a hostile donor answers a clone request with, given the request id and the clone id asked for.
type HostileAnswer = Box<dyn Fn(u32, &str) -> Vec<u8> + Send>;

fn begin(id: u32, clone_id: &str, bytes_total: u64) -> Vec<u8> {
    Response::CloneBegin {
        clone_id: clone_id.into(),
        resumed: false,
        position: "0-1-5".into(),
        bytes_total,
        tables: vec![CloneTable { name: "t".into(), rows: 1, checksum: 1 }],
    }
    .encode(id)
}

#[test]
fn a_hostile_donor_fails_the_clone_precisely_and_nothing_of_it_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let r = recipient(dir.path());
    let before = tables(&r);
    let cases: Vec<(HostileAnswer, &str)> = vec![
        (
            Box::new(|id, clone_id| {
                let row = ferry_core::row::row_bytes(&[("n".to_string(), Value::Int(1))].into());
                let (data, crc) = ferry_core::clone_chunk::encode(&[("k".to_string(), row)]);
                let mut out = begin(id, clone_id, 100);
                out.extend(Response::CloneChunk { table: "t".into(), data, crc32c: crc ^ 1 }.encode(id));
                out
            }),
            "fails its checksum",
        ),
        (Box::new(|id, clone_id| begin(id, clone_id, 100)), "truncated"),
        (Box::new(|id, _| Response::Pong.encode(id)), "answered Pong"),
    ];
    for (answer, says) in cases {
        let donor = hostile_donor(answer);
        post_ok(&r, "/v1/clone", json!({"donor": donor}));
        let failed = wait_state(&r, "failed");
        assert!(failed["error"].as_str().unwrap().contains(says), "{says}: {failed}");
        assert_eq!(r.status()["clone_incomplete"]["state"], "failed");
        assert_eq!(tables(&r), before, "nothing of the staging store was used");
    }
}

//! The protocol port's time bounds on a real node: a connection that begins no request within
//! `--protocol-idle-timeout-s` is closed with a TIMEOUT error frame saying why, a request being served is not
//! cut by it, nor is a replica's binlog stream (the master only sends on it); and a frame begun — even one that
//! declares the largest allowed length — must arrive whole within `--protocol-frame-timeout-s`.

use std::time::{Duration, Instant};

use crate::common::{eventually, rt, NodeProc, TOKEN};
use ferry_client::{Client, ErrorCode};
use ferry_core::limits::Limits;
use ferry_core::protocol::Response;
use serde_json::{json, Value};

/// Generous bound on every wait for the node.
const WITHIN: Duration = Duration::from_secs(60);

/// The next frame the node sends, within [`WITHIN`].
fn next_answer(client: &mut Client) -> Response {
    let read = rt().block_on(async { tokio::time::timeout(WITHIN, client.read_response()).await });
    read.expect("an answer from the node within the deadline").expect("a well-formed frame").1
}

/// A TIMEOUT error frame and its message, then the end of the connection.
fn closed_for_timeout(mut client: Client) -> String {
    let Response::Error { code, message } = next_answer(&mut client) else { panic!("not an error frame") };
    assert_eq!(ErrorCode::from_u16(code), Some(ErrorCode::Timeout), "{message}");
    let after = rt().block_on(async { tokio::time::timeout(WITHIN, client.read_response()).await });
    let after = after.expect("closed within the deadline");
    assert!(after.is_err(), "the connection is closed after the error frame: {after:?}");
    message
}

#[test]
fn a_silent_connection_is_closed_after_the_idle_timeout_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--protocol-idle-timeout-s", "1"]);
    let started = Instant::now();
    let message = closed_for_timeout(node.client());
    assert!(started.elapsed() >= Duration::from_secs(1), "closed after {:?}", started.elapsed());
    assert!(message.contains("no request for 1 s") && message.contains("--protocol-idle-timeout-s"), "{message}");
}

/// The idle timeout is about waiting for a client's next request: a wait-for-position that lasts longer than it
/// gets its own answer.
#[test]
fn a_request_being_served_is_not_cut_by_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--protocol-idle-timeout-s", "1"]);
    let mut client = node.client();
    let waited = rt().block_on(client.wait_for_position("0-1-1", Duration::from_secs(3)));
    let err = waited.expect_err("nothing was written: the wait times out");
    assert_eq!(err.code(), Some(ErrorCode::Timeout), "{err}");
    assert!(err.to_string().contains("not reached within 3000 ms"), "the wait's own answer: {err}");
}

/// The first byte of a frame starts its clock: here a frame declaring the largest allowed length (4 MiB by
/// default) of which 10 bytes come; the node neither waits for the rest past the frame timeout nor reserves it.
#[test]
fn a_half_sent_frame_is_closed_after_the_frame_timeout_naming_what_arrived() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--protocol-frame-timeout-s", "1"]);
    let declared = Limits::default().frame_bytes_max;
    let mut client = node.client();
    let mut frame = (declared as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&[0u8; 10]);
    rt().block_on(client.send_raw(&frame)).unwrap();
    let message = closed_for_timeout(client);
    assert!(message.contains(&format!("10 of {declared} bytes")), "{message}");
    assert!(message.contains("--protocol-frame-timeout-s"), "{message}");

    // Part of a length is a begun frame too.
    let mut client = node.client();
    rt().block_on(client.send_raw(&[1, 0])).unwrap();
    assert!(closed_for_timeout(client).contains("part of its length"));
}

/// A replica's stream sends nothing back (no semi-sync here) and, with a 3 s heartbeat and no writes, the master
/// sends nothing for 3 s either: the stream that delivers the first heartbeat has lived longer than the master's
/// 1 s idle timeout, and goes on carrying transactions.
#[test]
fn a_replicas_binlog_stream_outlives_the_masters_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &["--protocol-idle-timeout-s", "1"]);
    let replica = NodeProc::start(&dir.path().join("r"), 2, &["--read-only"]);
    let change = json!({"master": master.listen, "heartbeat_ms": 3000});
    assert_eq!(replica.post("/v1/replication/m/change-master", change, Some(TOKEN)).0, 200);
    assert_eq!(replica.post("/v1/replication/m/start", json!({}), Some(TOKEN)).0, 200);
    let connection = || replica.get("/v1/replication").1["connections"][0].clone();
    eventually("a heartbeat from the master", WITHIN, connection, |c| c["last_heartbeat_us"].is_u64());
    let heartbeat_us = connection()["last_heartbeat_us"].as_u64().unwrap();
    let streams: Value = master.get("/v1/replicas").1["replicas"].clone();
    let connected_at_us = streams[0]["connected_at_us"].as_u64().expect("the replica's stream on the master");
    assert!(heartbeat_us >= connected_at_us + 1_000_000, "the stream lived past the idle timeout: {streams}");

    rt().block_on(master.client().increment("t", "k", "n", 1)).unwrap();
    let (code, body) =
        replica.post("/v1/wait-for-position", json!({"position": "0-1-1", "timeout_ms": 30_000}), Some(TOKEN));
    assert_eq!((code, body["reached"].as_bool()), (200, Some(true)), "{body}");
    assert_eq!(master.get("/v1/replicas").1["replicas"][0]["connected_at_us"], streams[0]["connected_at_us"]);
}

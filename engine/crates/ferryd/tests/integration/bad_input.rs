//! Bad input gets a precise error, the node keeps serving every other client, and nothing is half-written.

use crate::common::{rt, NodeProc, EVENTUALLY};
use ferry_client::{Client, ClientError, ErrorCode, Txn};
use ferry_core::protocol::{Request, Response};
use ferry_core::row::{Row, Value};

/// Position and checksums: what must not move when a request is refused.
fn fingerprint(node: &NodeProc) -> (serde_json::Value, serde_json::Value) {
    let (_, sums) = node.get("/v1/checksums");
    (node.status()["gtid_binlog_pos"].clone(), sums)
}

fn error_of(resp: Response) -> (Option<ErrorCode>, String) {
    match resp {
        Response::Error { code, message } => (ErrorCode::from_u16(code), message),
        other => panic!("expected an error response, got {other:?}"),
    }
}

fn with_length(frame_without_length: &[u8]) -> Vec<u8> {
    let mut out = (frame_without_length.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(frame_without_length);
    out
}

#[test]
fn malformed_frames_get_errors_and_the_connection_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    rt().block_on(async {
        let mut c = Client::connect(&node.listen).await.unwrap();
        c.increment("t", "k", "n", 1).await.unwrap();
        let before = fingerprint(&node);

        // A transaction frame cut short inside its body (length prefix adjusted: the frame is whole, the body is not).
        let full = Request::Transact {
            domain: None,
            server_id: None,
            seq_no: None,
            ops: vec![ferry_core::row::RowOp::Increment {
                table: "t".into(),
                key: "k".into(),
                field: "n".into(),
                by: 1,
            }],
        }
        .encode(41);
        c.send_raw(&with_length(&full[4..full.len() - 3])).await.unwrap();
        let (id, resp) = c.read_response().await.unwrap();
        let (code, msg) = error_of(resp);
        assert_eq!((id, code), (41, Some(ErrorCode::MalformedFrame)));
        assert!(msg.contains("truncated") && msg.contains("at byte"), "{msg}");

        // An unknown operation.
        c.send_raw(&with_length(&[1, 0x6e, 42, 0, 0, 0])).await.unwrap();
        let (id, resp) = c.read_response().await.unwrap();
        let (code, msg) = error_of(resp);
        assert_eq!((id, code), (42, Some(ErrorCode::UnknownOperation)));
        assert!(msg.contains("0x6e"), "{msg}");

        // A protocol version from the future.
        c.send_raw(&with_length(&[9, 0x14, 43, 0, 0, 0])).await.unwrap();
        let (code, msg) = error_of(c.read_response().await.unwrap().1);
        assert_eq!(code, Some(ErrorCode::UnsupportedVersion));
        assert!(msg.contains("version 9"), "{msg}");

        // A frame shorter than the header.
        c.send_raw(&with_length(&[1, 0x14])).await.unwrap();
        assert_eq!(error_of(c.read_response().await.unwrap().1).0, Some(ErrorCode::MalformedFrame));

        // An unknown row-operation kind inside a transaction.
        let mut bad_op = vec![1, 0x10, 44, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 77];
        bad_op.extend_from_slice(&[0; 8]);
        c.send_raw(&with_length(&bad_op)).await.unwrap();
        let (code, msg) = error_of(c.read_response().await.unwrap().1);
        assert_eq!(code, Some(ErrorCode::MalformedFrame));
        assert!(msg.contains("unknown row operation 77"), "{msg}");

        // Same connection, still served.
        c.ping().await.unwrap();
        assert_eq!(fingerprint(&node), before, "nothing was written by the bad frames");
    });
}

#[test]
fn an_oversized_frame_is_refused_and_only_that_connection_closes() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--max-frame-bytes", "4096"]);
    rt().block_on(async {
        let mut other = Client::connect(&node.listen).await.unwrap();
        let mut c = Client::connect(&node.listen).await.unwrap();
        let huge = Txn::new().put("t", "k", [("blob".to_string(), Value::Text("x".repeat(10_000)))].into());
        let err = c.transact(huge).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::FrameTooLarge), "{err}");
        assert!(err.to_string().contains("4096"), "{err}");
        assert!(matches!(c.ping().await, Err(ClientError::Io(_))), "the connection is closed after it");
        other.increment("t", "k", "n", 1).await.unwrap();
        assert_eq!(other.get("t", "k").await.unwrap(), Some(Row::from([("n".to_string(), Value::Int(1))])));
    });
}

#[test]
fn oversized_transactions_are_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--max-txn-ops", "100", "--max-txn-bytes", "2000"]);
    let mut c = node.client();
    let before = fingerprint(&node);
    rt().block_on(async {
        let many = (0..101).fold(Txn::new(), |t, i| t.increment("t", &format!("k{i}"), "n", 1));
        let err = c.transact(many).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::TxnTooLarge));
        assert!(err.to_string().contains("101 operations") && err.to_string().contains("100"), "{err}");
        let big = (0..50).fold(Txn::new(), |t, i| {
            t.put("t", &format!("k{i}"), [("s".to_string(), Value::Text("y".repeat(60)))].into())
        });
        let err = c.transact(big).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::TxnTooLarge));
        assert!(err.to_string().contains("2000-byte"), "{err}");
    });
    assert_eq!(fingerprint(&node), before, "no part of either transaction was written");
}

#[test]
fn invalid_operations_are_refused_with_what_was_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let mut c = node.client();
    rt().block_on(async {
        c.transact(Txn::new().put("t", "k", [("s".to_string(), Value::Text("text".into()))].into())).await.unwrap();
        let before = fingerprint(&node);
        // The first operation is fine, the second is not: neither is applied.
        let err = c.transact(Txn::new().increment("t", "ok", "n", 1).increment("t", "k", "s", 1)).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::TypeMismatch));
        assert!(err.to_string().contains("\"s\""), "{err}");
        let err = c.transact(Txn::new().increment("bad table!", "k", "n", 1)).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidRequest));
        assert!(err.to_string().contains("'!'") || err.to_string().contains("' '"), "{err}");
        let err = c.transact(Txn::new()).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidRequest));
        c.transact(Txn::new().put("t", "max", [("n".to_string(), Value::Int(i64::MAX))].into())).await.unwrap();
        let before_overflow = fingerprint(&node);
        let err = c.increment("t", "max", "n", 1).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::Overflow));
        assert_eq!(fingerprint(&node), before_overflow);
        assert_ne!(before, before_overflow);
        assert_eq!(c.get("t", "ok").await.unwrap(), None);
    });
}

#[test]
fn bad_gtid_text_points_at_the_character() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &[]);
    let mut c = node.client();
    let err = rt().block_on(c.wait_for_position("0-1-5,1-x-2", std::time::Duration::from_millis(10))).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::BadGtid));
    assert!(err.to_string().contains("column 9"), "{err}");
    rt().block_on(c.ping()).unwrap();
}

#[test]
fn connections_past_the_limit_are_refused_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--max-connections", "2"]);
    rt().block_on(async {
        let mut a = Client::connect(&node.listen).await.unwrap();
        let mut b = Client::connect(&node.listen).await.unwrap();
        a.ping().await.unwrap();
        b.ping().await.unwrap();
        let mut c = Client::connect(&node.listen).await.unwrap();
        let (id, resp) = c.read_response().await.unwrap();
        let (code, msg) = error_of(resp);
        assert_eq!((id, code), (0, Some(ErrorCode::TooManyConnections)));
        assert!(msg.contains("at most 2"), "{msg}");
        drop(a);
        // Once one leaves, a new connection is served again (as soon as the node saw it leave).
        let deadline = tokio::time::Instant::now() + EVENTUALLY;
        loop {
            let mut d = Client::connect(&node.listen).await.unwrap();
            if d.ping().await.is_ok() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "a new connection served once one of the two left: not within {EVENTUALLY:?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        b.ping().await.unwrap();
    });
}

#[test]
fn connections_that_authenticate_find_a_place_when_the_others_took_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--max-connections", "2"]);
    rt().block_on(async {
        // Two clients take every place (idle, as slow or forgotten clients do).
        let mut a = Client::connect(&node.listen).await.unwrap();
        let mut b = Client::connect(&node.listen).await.unwrap();
        a.ping().await.unwrap();
        b.ping().await.unwrap();
        // A replica or the control plane authenticates first: it gets a kept place, then one of its own.
        let mut replica = Client::connect(&node.listen).await.unwrap();
        replica.auth(crate::common::TOKEN).await.unwrap();
        replica.ping().await.unwrap();
        // Having left the kept place, the next authenticating connection finds it free too.
        let mut control = Client::connect(&node.listen).await.unwrap();
        control.auth(crate::common::TOKEN).await.unwrap();
        control.ping().await.unwrap();
        // A client that asks anything else first in a kept place is refused and closed, saying why.
        let mut other = Client::connect(&node.listen).await.unwrap();
        let err = other.ping().await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::TooManyConnections), "{err}");
        assert!(
            err.to_string().contains("at most 2") && err.to_string().contains("asked something else first"),
            "{err}"
        );
        // Everyone admitted is still served.
        for client in [&mut a, &mut b, &mut replica, &mut control] {
            client.ping().await.unwrap();
        }
    });
}

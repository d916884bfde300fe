//! The admin API's connection bounds on a real node, over raw TCP: a connection past `--admin-connections-max`
//! is answered 503 and closed at once (never queued), requests are served again once a connection closes; a
//! connection that sends no request head within `--admin-idle-timeout-s` is closed, as is a keep-alive
//! connection idle after its answer; and SIGTERM does not wait for idle connections.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::{eventually, NodeProc};

/// Generous bound on every wait for the node to close a connection.
const CLOSE_WITHIN: Duration = Duration::from_secs(60);

fn connect(node: &NodeProc) -> TcpStream {
    let stream = TcpStream::connect(&node.admin).unwrap();
    stream.set_read_timeout(Some(CLOSE_WITHIN)).unwrap();
    stream
}

/// Everything the node sends on `stream` until it closes it.
fn read_until_closed(mut stream: TcpStream, what: &str) -> String {
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => String::from_utf8_lossy(&answer).into_owned(),
        Err(e) => panic!("{what}: not closed within {CLOSE_WITHIN:?} ({e}); read so far: {answer:?}"),
    }
}

/// Asks `GET /v1/health` on a keep-alive connection and reads its answer, leaving the connection open.
fn health_kept_open(stream: &mut TcpStream) -> String {
    stream.write_all(b"GET /v1/health HTTP/1.1\r\nhost: ferryd\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    while !answer.ends_with(br#"{"ok":true}"#) {
        let n = stream.read(&mut chunk).expect("the health answer within the deadline");
        assert!(n > 0, "closed before the whole answer: {}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(answer).unwrap()
}

/// `GET /v1/health` on a connection of its own: the whole answer, or an error when the node cut it.
fn health(node: &NodeProc) -> std::io::Result<String> {
    let mut stream = connect(node);
    stream.write_all(b"GET /v1/health HTTP/1.1\r\nhost: ferryd\r\nconnection: close\r\n\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

#[test]
fn a_connection_past_the_cap_is_refused_at_once_and_requests_are_served_again_once_one_closes() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--admin-connections-max", "2"]);
    // Two silent connections take the two places (the node accepts connections in the order they were made).
    let mut held: Vec<TcpStream> = (0..2).map(|_| connect(&node)).collect();
    let refused = read_until_closed(connect(&node), "the connection past the cap");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("too_many_connections") && refused.contains("at most 2"), "{refused}");

    drop(held.pop());
    eventually(
        "a request served once a held connection closed",
        CLOSE_WITHIN,
        || health(&node).is_ok_and(|answer| answer.starts_with("HTTP/1.1 200")),
        |&served| served,
    );
    drop(held);
}

#[test]
fn a_silent_connection_and_an_idle_keep_alive_one_are_closed_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--admin-idle-timeout-s", "1"]);
    let started = Instant::now();
    read_until_closed(connect(&node), "a connection that sends nothing");
    assert!(started.elapsed() >= Duration::from_secs(1), "closed after {:?}, before the timeout", started.elapsed());

    let mut kept = connect(&node);
    assert!(health_kept_open(&mut kept).starts_with("HTTP/1.1 200"));
    let rest = read_until_closed(kept, "a keep-alive connection idle after its answer");
    assert_eq!(rest, "", "nothing more is sent");
}

#[test]
fn sigterm_closes_idle_admin_connections_and_the_node_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProc::start(dir.path(), 1, &["--admin-idle-timeout-s", "3600"]);
    let mut kept = connect(&node);
    assert!(health_kept_open(&mut kept).starts_with("HTTP/1.1 200"));
    let silent = connect(&node);
    node.stop();
    assert_eq!(read_until_closed(kept, "a keep-alive connection at shutdown"), "");
    assert_eq!(read_until_closed(silent, "a silent connection at shutdown"), "");
}

#[test]
fn a_sigterm_the_moment_the_node_says_ready_stops_it_cleanly() {
    // The node says ready before it has started all it serves; a stop asked that instant (a service manager's, a
    // test's) must still be a clean one, never the signal's default action.
    for attempt in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let mut node = NodeProc::start(dir.path(), 1, &[]);
        node.stop(); // asserts a successful exit, with the log when it is not
        assert!(node.log().contains("shutting down"), "attempt {attempt}: {}", node.log());
    }
}

/// Asks `GET /v1/status` with the node's token on a keep-alive connection and reads the answer's status line and
/// headers (the body is left unread: the next request on the connection is not made).
fn status_line_authenticated(stream: &mut TcpStream) -> String {
    let request =
        format!("GET /v1/status HTTP/1.1\r\nhost: ferryd\r\nauthorization: Bearer {}\r\n\r\n", crate::common::TOKEN);
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n") {
        let n = stream.read(&mut byte).expect("an answer within the deadline");
        assert!(n > 0, "closed before answering: {}", String::from_utf8_lossy(&answer));
        answer.push(byte[0]);
    }
    String::from_utf8(answer).unwrap()
}

#[test]
fn connections_that_never_authenticate_cannot_take_the_places_of_authenticated_ones() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProc::start(dir.path(), 1, &["--admin-connections-max", "2", "--admin-idle-timeout-s", "3600"]);
    // The control plane's two kept-alive connections, authenticated by their first request.
    let mut control: Vec<TcpStream> = (0..2).map(|_| connect(&node)).collect();
    for stream in &mut control {
        assert!(status_line_authenticated(stream).starts_with("HTTP/1.1 200"));
    }
    // Connections that never authenticate (slow headers, a scan) take only the places kept for them...
    let silent: Vec<TcpStream> = (0..2).map(|_| connect(&node)).collect();
    let refused = read_until_closed(connect(&node), "an unauthenticated connection past its cap");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("not authenticated yet"), "{refused}");
    // ...and are closed once they have not authenticated in time, however busy: a liveness check every 0.2 s
    // does not keep one open.
    let started = Instant::now();
    let mut busy = silent.into_iter().next().unwrap();
    let closed = loop {
        if busy.write_all(b"GET /v1/health HTTP/1.1\r\nhost: ferryd\r\n\r\n").is_err() {
            break started.elapsed();
        }
        let mut chunk = [0u8; 1024];
        match busy.read(&mut chunk) {
            Ok(0) | Err(_) => break started.elapsed(),
            Ok(_) => std::thread::sleep(Duration::from_millis(200)),
        }
        assert!(started.elapsed() < CLOSE_WITHIN, "an unauthenticated connection kept open for {CLOSE_WITHIN:?}");
    };
    assert!(closed < CLOSE_WITHIN, "closed after {closed:?}");
    // The authenticated connections were served throughout, and still are (their earlier answers' bodies are
    // read first).
    for stream in &mut control {
        stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut drained = [0u8; 65536];
        while stream.read(&mut drained).is_ok_and(|n| n > 0) {}
        stream.set_read_timeout(Some(CLOSE_WITHIN)).unwrap();
        assert!(status_line_authenticated(stream).starts_with("HTTP/1.1 200"));
    }
}

//! The memory and space bounds of replication, each filled by real `ferryd` processes: the relay log's space
//! (`--relay-log-space-bytes-max`: the IO side waits, saying so, until the SQL side frees space), the SQL side's
//! read-ahead (`--read-ahead-bytes-max`) and a master's buffer per replica (`--dump-buffer-bytes-max`). Each
//! test shows the bound reached and never passed (by the relay directory's size on disk and by the gauges),
//! the nodes serving meanwhile, and replication completing once the pressure is gone.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{eventually, rt, NodeProc, TOKEN};
use ferry_client::Txn;
use ferry_core::row::{Row, Value};
use serde_json::{json, Value as Json};

/// Bytes of the text field of the rows of the relay test: a replicated transaction is a little over 1 KiB.
const ROW_TEXT_BYTES: usize = 1000;

fn text_row(len: usize) -> Row {
    [("v".to_string(), Value::Text("x".repeat(len)))].into()
}

/// `n` transactions of one row each with a text field of `len` bytes, keys `{prefix}{i}`; every one must commit.
fn write(node: &NodeProc, prefix: &str, n: usize, len: usize) {
    let mut c = node.client();
    rt().block_on(async {
        for i in 0..n {
            c.transact(Txn::new().put("t", &format!("{prefix}{i}"), text_row(len))).await.unwrap();
        }
    });
}

/// The largest transaction of the node's binlog, in bytes (what a bound may be passed by at most).
fn largest_txn_bytes(node: &NodeProc) -> u64 {
    node.binlog_transactions().iter().map(|t| t.end_offset - t.offset).max().unwrap()
}

fn replicate(replica: &NodeProc, master: &NodeProc, start: Json) {
    let (code, body) = replica.post("/v1/replication/m/change-master", json!({"master": master.listen}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let (code, body) = replica.post("/v1/replication/m/start", start, Some(TOKEN));
    assert_eq!(code, 200, "{body}");
}

fn resume_sql(replica: &NodeProc) {
    let (code, body) = replica.post("/v1/replication/m/resume-sql", json!({}), Some(TOKEN));
    assert_eq!(code, 200, "{body}");
}

fn converge(replica: &NodeProc, master: &NodeProc) {
    let target = master.status()["gtid_binlog_pos"].as_str().unwrap().to_string();
    let (code, body) =
        replica.post("/v1/wait-for-position", json!({"position": target, "timeout_ms": 60_000}), Some(TOKEN));
    assert_eq!(code, 200);
    assert_eq!(body["reached"], true, "replica did not reach {target}: {}\n{}", replica.status(), replica.log());
    assert_eq!(replica.get("/v1/checksums").1["tables"], master.get("/v1/checksums").1["tables"]);
}

fn connection(node: &NodeProc) -> Json {
    node.get("/v1/replication").1["connections"][0].clone()
}

/// Polls (bounded by 30 s) until `check` holds on the connection's status.
fn wait_connection(node: &NodeProc, what: &str, check: impl Fn(&Json) -> bool) -> Json {
    node.eventually(&format!("the connection: {what}"), || connection(node), check)
}

/// The value of a metric line starting with `name` (labels included in `name` when given).
fn metric(node: &NodeProc, name: &str) -> u64 {
    let text = node.get_text("/metrics");
    let line = text
        .lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{line}"))
}

/// Bytes the files of a directory take (files deleted while listing are skipped).
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum()
}

/// Samples a directory's size every few milliseconds until dropped; `max()` is the largest seen.
struct DirWatch {
    max: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DirWatch {
    fn start(dir: &Path) -> DirWatch {
        let (max, done) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let thread = {
            let (dir, max, done) = (dir.to_path_buf(), max.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    max.fetch_max(dir_bytes(&dir), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        DirWatch { max, done, thread: Some(thread) }
    }

    fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }
}

impl Drop for DirWatch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

const RELAY_SPACE_BYTES_MAX: u64 = 64 << 10;
const READ_AHEAD_BYTES_MAX: u64 = 16 << 10;

/// A replica whose SQL side is stopped while the master writes ~600 KiB: its relay log fills to the space bound
/// and no further, the IO side says it waits for space (status and metric), the master keeps committing; once the
/// SQL side runs, it applies through a read-ahead held at its bound, the IO side resumes, and the replica ends
/// equal to the master, its relay log never over the bound on disk.
#[test]
fn the_relay_log_stops_at_its_space_bound_until_the_sql_side_frees_it_and_replication_completes() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(&dir.path().join("m"), 1, &["--durability", "none"]);
    let replica = NodeProc::start(
        &dir.path().join("r"),
        2,
        &[
            "--read-only",
            "--durability",
            "none",
            "--relay-log-space-bytes-max",
            &RELAY_SPACE_BYTES_MAX.to_string(),
            "--read-ahead-bytes-max",
            &READ_AHEAD_BYTES_MAX.to_string(),
        ],
    );
    let status = replica.status();
    assert_eq!(status["relay_log_space_bytes_max"], RELAY_SPACE_BYTES_MAX);
    assert_eq!(status["read_ahead_bytes_max"], READ_AHEAD_BYTES_MAX);
    replicate(&replica, &master, json!({"sql_paused": true}));
    let relay_dir = replica.dir.join("data").join("relay").join("m");
    let watch = DirWatch::start(&relay_dir);

    write(&master, "a", 600, ROW_TEXT_BYTES);
    let waiting = wait_connection(&replica, "waiting_for_relay_space", |c| c["waiting_for_relay_space"] == true);
    assert_eq!(waiting["io_state"], "connected", "{waiting}");
    let received = waiting["transactions_received"].as_u64().unwrap();
    assert!(received > 0 && received < 600, "the relay log stopped receiving: {waiting}");
    let on_disk = dir_bytes(&relay_dir);
    assert!(on_disk <= RELAY_SPACE_BYTES_MAX, "{on_disk} bytes of relay log: {waiting}");
    assert!(on_disk + largest_txn_bytes(&master) + 8 > RELAY_SPACE_BYTES_MAX, "it was filled: {on_disk}");
    assert_eq!(waiting["relay_log_space_bytes"], on_disk, "the status counts what is on disk");
    assert_eq!(metric(&replica, "ferry_replication_waiting_for_relay_space{connection=\"m\"}"), 1);
    assert_eq!(metric(&replica, "ferry_replication_relay_log_space_bytes{connection=\"m\"}"), on_disk);
    assert_eq!(metric(&replica, "ferry_relay_log_space_bytes_max"), RELAY_SPACE_BYTES_MAX);
    assert_eq!(waiting["read_ahead_bytes"], 0, "the SQL side is stopped");

    // Both nodes keep serving: the master commits, the replica answers reads and status.
    write(&master, "b", 50, ROW_TEXT_BYTES);
    assert_eq!(connection(&replica)["waiting_for_relay_space"], true);
    let mut c = replica.client();
    rt().block_on(c.get("t", "a0")).unwrap();

    let started = Instant::now();
    resume_sql(&replica);
    converge(&replica, &master);
    let caught_up = started.elapsed();
    let largest = largest_txn_bytes(&master);
    let done = wait_connection(&replica, "no more wait for space", |c| c["waiting_for_relay_space"] == false);
    assert_eq!(done["io_state"], "connected", "{done}");
    assert_eq!(done["transactions_applied"], 650);
    assert!(watch.max() <= RELAY_SPACE_BYTES_MAX, "the relay log took {} bytes on disk", watch.max());
    let relay_peak = done["relay_log_space_bytes_peak"].as_u64().unwrap();
    assert!(relay_peak <= RELAY_SPACE_BYTES_MAX && relay_peak + largest + 8 > RELAY_SPACE_BYTES_MAX, "{done}");
    // The read-ahead reached its bound (the relay log held four times as much) and passed it by less than one
    // transaction.
    let ahead_peak = done["read_ahead_bytes_peak"].as_u64().unwrap();
    assert!(ahead_peak >= READ_AHEAD_BYTES_MAX && ahead_peak < READ_AHEAD_BYTES_MAX + largest, "{done}");
    assert_eq!(metric(&replica, "ferry_replication_read_ahead_bytes_peak{connection=\"m\"}"), ahead_peak);
    assert_eq!(metric(&replica, "ferry_replication_waiting_for_relay_space{connection=\"m\"}"), 0);
    eprintln!("caught up 650 transactions in {caught_up:?}; relay peak {relay_peak} B, read-ahead peak {ahead_peak} B");
}

const DUMP_BUFFER_BYTES_MAX: u64 = 256 << 10;
/// The rows of the dump test: 32 KiB transactions, 40 MiB in all (more than loopback's socket buffers hold).
const DUMP_ROW_TEXT_BYTES: usize = 32 << 10;
const DUMP_TXNS: usize = 1280;

/// A master with 40 MiB of binlog and a small dump buffer serves a replica that cannot keep up (its relay log
/// is small and its SQL side stopped, so the stream backs up into the socket): every batch the master reads for
/// it stops at the bound (the gauges of bytes buffered, now and at most), the master keeps committing, and once
/// the replica applies, replication completes.
#[test]
fn a_masters_buffer_for_a_slow_replica_stops_at_its_bound_and_replication_completes() {
    let dir = tempfile::tempdir().unwrap();
    let master = NodeProc::start(
        &dir.path().join("m"),
        1,
        &["--durability", "none", "--dump-buffer-bytes-max", &DUMP_BUFFER_BYTES_MAX.to_string()],
    );
    assert_eq!(master.status()["dump_buffer_bytes_max"], DUMP_BUFFER_BYTES_MAX);
    assert_eq!(metric(&master, "ferry_dump_buffer_bytes_max"), DUMP_BUFFER_BYTES_MAX);
    write(&master, "a", DUMP_TXNS, DUMP_ROW_TEXT_BYTES);
    let largest = largest_txn_bytes(&master);
    let replica = NodeProc::start(
        &dir.path().join("r"),
        2,
        &["--read-only", "--durability", "none", "--relay-log-space-bytes-max", &(1u64 << 20).to_string()],
    );
    replicate(&replica, &master, json!({"sql_paused": true}));
    wait_connection(&replica, "waiting_for_relay_space", |c| c["waiting_for_relay_space"] == true);
    // The stream is stuck on the full socket: what the master holds for the replica stays within the bound. Until
    // the socket's buffers are full the master still sends, and between two batches it holds nothing: the listing
    // and the gauge are read together until both show bytes held (as they do for good once it is stuck), and every
    // reading on the way is within the bound.
    master.eventually(
        "the master holding bytes for the replica, by its listing and its gauge",
        || {
            let listed = master.get("/v1/replicas").1["replicas"][0].clone();
            let now = metric(&master, "ferry_dump_buffer_bytes");
            let buffered = listed["buffered_bytes"].as_u64().unwrap_or(0);
            assert!(buffered < DUMP_BUFFER_BYTES_MAX + largest, "{listed}");
            assert!(now < DUMP_BUFFER_BYTES_MAX + largest, "ferry_dump_buffer_bytes {now}");
            (listed, now)
        },
        |(listed, now)| listed["buffered_bytes"].as_u64().unwrap_or(0) > 0 && *now > 0,
    );
    write(&master, "b", 20, DUMP_ROW_TEXT_BYTES);

    resume_sql(&replica);
    converge(&replica, &master);
    // Every batch was cut at the bound: the most held at once reached it and passed it by less than one
    // transaction (40 MiB were sent).
    let peak = metric(&master, "ferry_dump_buffer_bytes_peak");
    assert!(peak >= DUMP_BUFFER_BYTES_MAX && peak < DUMP_BUFFER_BYTES_MAX + largest, "peak {peak}");
    let listed = master.get("/v1/replicas").1["replicas"][0].clone();
    assert_eq!(listed["buffered_bytes_peak"], peak, "{listed}");
    assert_eq!(listed["transactions_sent"], DUMP_TXNS + 20);
    eventually(
        "the dump buffer drained",
        crate::common::EVENTUALLY,
        || metric(&master, "ferry_dump_buffer_bytes"),
        |b| *b == 0,
    );
}

/// A bound below the smallest allowed is refused at start-up, naming the flag's setting.
#[test]
fn a_byte_bound_below_its_minimum_is_refused_at_start_up() {
    for flag in ["--dump-buffer-bytes-max", "--read-ahead-bytes-max", "--relay-log-space-bytes-max"] {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ferryd"))
            .args(["--server-id", "1", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args([flag, "100"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "ferryd started with {flag} 100");
        let err = String::from_utf8_lossy(&out.stderr);
        let setting = flag.trim_start_matches("--").replace('-', "_");
        assert!(err.contains(&setting) && err.contains("4096"), "{err}");
    }
}

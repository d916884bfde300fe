//! `ferry-binlog --from-node … --follow` against real `ferryd` nodes: it follows the master across a
//! switchover done through the admin API while a writer runs, printing every transaction once in each domain's
//! order; SIGINT stops it with the position to resume from on stderr, and resuming there prints exactly what
//! came after. It reads with the consumer token; the admin token is never given to it.
//!
//! The nodes are the `ferryd` built beside this test (`cargo build -p ferryd`), or `FERRYD_BIN`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry_client::{Client, ErrorCode, Txn};
use ferry_core::gtid::{DomainId, Gtid};
use serde_json::{json, Value};

const ADMIN_TOKEN: &str = "follow-test-admin-token-0123456789";
const CONSUMER_TOKEN: &str = "follow-test-consumer-token-0123456789";
/// How long a wait of this test may take before it fails, naming what it waited for.
const EVENTUALLY: Duration = Duration::from_secs(60);

fn ferryd() -> PathBuf {
    let path = std::env::var_os("FERRYD_BIN").map(PathBuf::from).unwrap_or_else(|| {
        let exe = std::env::current_exe().unwrap();
        exe.parent().and_then(Path::parent).unwrap().join("ferryd")
    });
    assert!(path.exists(), "{} not found: build it first (cargo build -p ferryd) or set FERRYD_BIN", path.display());
    path
}

/// Waits until `done` holds on what `probe` sees; past [`EVENTUALLY`] fails naming `what`, with what it saw.
fn eventually<V: std::fmt::Debug>(what: &str, mut probe: impl FnMut() -> V, done: impl Fn(&V) -> bool) -> V {
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        let seen = probe();
        if done(&seen) {
            return seen;
        }
        assert!(Instant::now() < deadline, "{what}: not within {EVENTUALLY:?}; last seen: {seen:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

struct Node {
    child: Child,
    listen: String,
    admin: String,
}

impl Node {
    fn start(dir: &Path, server_id: u32, extra: &[&str]) -> Node {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("admin-token"), ADMIN_TOKEN).unwrap();
        std::fs::write(dir.join("consumer-token"), CONSUMER_TOKEN).unwrap();
        let log = std::fs::File::create(dir.join("ferryd.log")).unwrap();
        let mut child = Command::new(ferryd())
            .args(["--server-id", &server_id.to_string(), "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--admin-token-file")
            .arg(dir.join("admin-token"))
            .arg("--consumer-token-file")
            .arg(dir.join("consumer-token"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let ready: Value = serde_json::from_str(&line).expect("ferryd reports ready");
        Node { child, listen: ready["listen"].as_str().unwrap().into(), admin: ready["admin"].as_str().unwrap().into() }
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let url = format!("http://{}{}", self.admin, path);
        let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();
        let resp = http.post(url).bearer_auth(ADMIN_TOKEN).json(&body).send().unwrap();
        let status = resp.status();
        let body: Value = resp.json().unwrap_or(Value::Null);
        assert!(status.is_success(), "POST {path}: {status} {body}");
        body
    }

    fn delete(&self, path: &str) {
        let url = format!("http://{}{}", self.admin, path);
        let http = reqwest::blocking::Client::new();
        assert!(http.delete(url).bearer_auth(ADMIN_TOKEN).send().unwrap().status().is_success(), "DELETE {path}");
    }

    fn replicate(&self, name: &str, master: &Node, use_gtid: &str) {
        self.post(
            &format!("/v1/replication/{name}/change-master"),
            json!({"master": master.listen, "use_gtid": use_gtid}),
        );
        self.post(&format!("/v1/replication/{name}/start"), json!({}));
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Planned switchover through the admin API: the old master read-only, the candidate level with it and promoted,
/// the old master repointed to it.
fn switchover(old: &Node, new: &Node, old_name: &str, new_name: &str) {
    let ro = old.post("/v1/read-only", json!({"read_only": true, "wait_for_in_flight_ms": 30_000}));
    let position = ro["gtid_binlog_pos"].as_str().unwrap();
    let reached = new.post("/v1/wait-for-position", json!({"position": position, "timeout_ms": 60_000}));
    assert_eq!(reached["reached"], true, "{reached}");
    new.delete(&format!("/v1/replication/{old_name}"));
    new.post("/v1/read-only", json!({"read_only": false}));
    old.replicate(new_name, new, "current_pos");
}

/// A running `ferry-binlog`, its stdout and stderr lines collected as they come.
struct Cli {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    said: Arc<Mutex<Vec<String>>>,
}

/// Collects the lines of `from` as they come.
fn collect(from: impl std::io::Read + Send + 'static) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    std::thread::spawn({
        let lines = lines.clone();
        move || {
            for line in BufReader::new(from).lines() {
                lines.lock().unwrap().push(line.unwrap());
            }
        }
    });
    lines
}

impl Cli {
    fn start(args: &[&str]) -> Cli {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferry-binlog"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = collect(child.stdout.take().unwrap());
        let said = collect(child.stderr.take().unwrap());
        Cli { child, lines, said }
    }

    /// What it said on stderr so far.
    fn stderr(&self) -> String {
        self.said.lock().unwrap().join("\n")
    }

    /// The GTIDs of the printed `gtid` lines, in order.
    fn gtids(&self) -> Vec<String> {
        self.lines.lock().unwrap().iter().filter_map(|l| gtid_of(l)).collect()
    }

    /// Sends `signal`, waits for the exit; the exit code and everything it said on stderr.
    fn stop(mut self, signal: &str) -> (i32, String) {
        assert!(Command::new("kill").args([signal, &self.child.id().to_string()]).status().unwrap().success());
        self.wait()
    }

    fn wait(&mut self) -> (i32, String) {
        let status = eventually("ferry-binlog's exit", || self.child.try_wait().unwrap(), Option::is_some).unwrap();
        let stopped = |said: &String| said.contains("ferry-binlog: stopped; ");
        let stderr = eventually("its last words on stderr", || self.stderr(), stopped);
        (status.code().expect("exited, not killed"), stderr)
    }
}

impl Drop for Cli {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn gtid_of(line: &str) -> Option<String> {
    let (_, rest) = line.split_once(" gtid ")?;
    rest.split(' ').next().map(str::to_string)
}

fn by_domain(gtids: impl IntoIterator<Item = Gtid>) -> BTreeMap<DomainId, Vec<Gtid>> {
    let mut out: BTreeMap<DomainId, Vec<Gtid>> = BTreeMap::new();
    for g in gtids {
        out.entry(g.domain).or_default().push(g);
    }
    out
}

/// Every transaction of `node`'s binlog directory, in binlog order.
fn binlog_gtids(dir: &Path) -> Vec<Gtid> {
    use ferry_core::binlog::reader::{FileReader, Item, TransactionReader};
    let mut out = Vec::new();
    for path in ferry_core::binlog::files_at(&dir.join("data").join("binlog")).unwrap() {
        for item in TransactionReader::new(FileReader::open(&path).unwrap()) {
            if let Item::Transaction(t) = item.unwrap() {
                out.push(t.gtid());
            }
        }
    }
    out
}

/// Increments in domains 1 and 2 in turn on whichever node takes writes, until `stop`; the GTIDs answered.
fn write_until(nodes: Vec<String>, stop: Arc<AtomicBool>) -> Vec<Gtid> {
    /// Pause of the workload when no node takes writes (the switchover's window).
    const NO_MASTER_PAUSE: Duration = Duration::from_millis(5);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let (mut acknowledged, mut at, mut i) = (Vec::new(), 0, 0u64);
        let mut client = Client::connect(&nodes[at]).await.unwrap();
        while !stop.load(Ordering::Relaxed) {
            let domain = 1 + (i % 2) as u32;
            let txn = Txn::new().domain(domain).increment("ledger", &format!("acct{}", i % 5), "balance", 1);
            match client.transact(txn).await {
                Ok(c) => {
                    acknowledged.push(c.gtid);
                    i += 1;
                }
                Err(e) if e.code() == Some(ErrorCode::ReadOnly) => {
                    at = (at + 1) % nodes.len();
                    client = Client::connect(&nodes[at]).await.unwrap();
                    tokio::time::sleep(NO_MASTER_PAUSE).await;
                }
                Err(e) => panic!("write to {}: {e}", nodes[at]),
            }
        }
        acknowledged
    })
}

#[test]
fn following_prints_every_transaction_once_across_a_switchover_and_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let a = Node::start(&dir.path().join("a"), 1, &[]);
    let b = Node::start(&dir.path().join("b"), 2, &["--read-only"]);
    b.replicate("a", &a, "slave_pos");
    let token_file = dir.path().join("a").join("consumer-token");
    let token = token_file.to_str().unwrap();
    let nodes = format!("{},{}", a.listen, b.listen);
    let cli = Cli::start(&["--from-node", &nodes, "--follow", "--token-file", token, "--start-position", ""]);

    let stop = Arc::new(AtomicBool::new(false));
    let writer = std::thread::spawn({
        let (nodes, stop) = (vec![a.listen.clone(), b.listen.clone()], stop.clone());
        move || write_until(nodes, stop)
    });
    eventually("transactions printed from the first master", || cli.gtids().len(), |n| *n > 100);
    switchover(&a, &b, "a", "b");
    let following_b = format!("ferry-binlog: following {} from '", b.listen);
    eventually("following the new master", || cli.stderr(), |said| said.contains(&following_b));
    let moved = cli.gtids().len();
    eventually("transactions printed from the new master", || cli.gtids().len(), |n| *n > moved + 100);
    stop.store(true, Ordering::Relaxed);
    let acknowledged = writer.join().unwrap();

    // Everything the new master's binlog has, once each, in each domain's order.
    let binlog = binlog_gtids(&dir.path().join("b"));
    let printed = eventually("everything printed", || cli.gtids(), |g| g.len() >= binlog.len());
    let printed: Vec<Gtid> = printed.iter().map(|g| g.parse().unwrap()).collect();
    assert_eq!(printed.len(), binlog.len(), "nothing printed twice");
    assert_eq!(by_domain(printed.iter().copied()), by_domain(binlog.iter().copied()));
    for g in &acknowledged {
        assert!(printed.contains(g), "acknowledged {g} not printed");
    }
    // The existing text form: file and offset, the GTID with its time, row images, the commit.
    let lines = cli.lines.lock().unwrap().clone();
    assert!(
        lines[0].starts_with("ferry-bin.000001 @") && lines[0].contains(" gtid 1-1-1 ") && lines[0].contains(" ts=")
    );
    assert!(lines[1].contains(" rows changes=1: ledger[\"acct0\"] none -> {balance: 1}"), "{}", lines[1]);
    assert!(lines[2].contains(" commit changes=1"), "{}", lines[2]);

    // SIGINT: a clean stop, with the position after the last transaction printed.
    let (code, stderr) = cli.stop("-INT");
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("ferry-binlog: following {} from ''", a.listen)), "{stderr}");
    assert!(stderr.contains(&format!("ferry-binlog: following {} from '", b.listen)), "{stderr}");
    let last = stderr.lines().last().unwrap();
    let resume =
        last.strip_prefix("ferry-binlog: stopped; resume with --start-position '").unwrap().trim_end_matches('\'');
    let end: ferry_core::GtidPosition = resume.parse().unwrap();
    for (domain, gtids) in by_domain(binlog.iter().copied()) {
        assert_eq!(end.get(domain), gtids.last().copied(), "{stderr}");
    }

    // New transactions; resuming from that position prints exactly them, in JSON, and stops at --stop-position.
    let client = Client::connect(&b.listen);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut client = runtime.block_on(async { client.await.unwrap() });
    let new: Vec<Gtid> = (0..6u32)
        .map(|i| {
            runtime
                .block_on(client.transact(Txn::new().domain(1 + i % 2).increment("ledger", "acct9", "balance", 1)))
                .unwrap()
                .gtid
        })
        .collect();
    let stop_at = format!("{},{}", new[4], new[5]);
    let mut again = Cli::start(&[
        "--from-node",
        &nodes,
        "--follow",
        "--token-file",
        token,
        "--start-position",
        resume,
        "--stop-position",
        &stop_at,
        "--domain",
        "1,2",
        "--json",
        "--name",
        "resumed",
    ]);
    let (code, stderr) = again.wait();
    assert_eq!(code, 0, "{stderr}");
    let lines = again.lines.lock().unwrap().clone();
    let gtid_events: Vec<Value> =
        lines.iter().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|v| v["type"] == "gtid").collect();
    let gtids: Vec<Gtid> = gtid_events.iter().map(|v| serde_json::from_value(v["gtid"].clone()).unwrap()).collect();
    assert_eq!(gtids, new, "exactly the new ones: {stderr}");
    assert!(gtid_events.iter().all(|v| v["commit_ts_us"].as_u64().unwrap() > 0));
    assert!(stderr.trim_end().ends_with(&format!("resume with --start-position '{stop_at}'")), "{stderr}");
}

#[test]
fn a_wrong_token_is_refused_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let a = Node::start(&dir.path().join("a"), 1, &[]);
    let wrong = dir.path().join("wrong-token");
    std::fs::write(&wrong, "not-this-clusters-token-0123").unwrap();
    let mut cli = Cli::start(&["--from-node", &a.listen, "--follow", "--token-file", wrong.to_str().unwrap()]);
    let (code, stderr) = cli.wait();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("PERMISSION_DENIED") && stderr.contains("wrong token"), "{stderr}");
    assert!(stderr.trim_end().ends_with("no node was followed: nothing was printed"), "{stderr}");
}

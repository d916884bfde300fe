//! Test harness: starts real `ferryd` processes on loopback (port 0) in temporary directories, and talks to
//! them over their real sockets (binary protocol through `ferry-client`, admin API over HTTP, every call with
//! the admin token unless a test says otherwise).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const TOKEN: &str = "test-admin-token-0123456789";
/// The change consumers' token every node's directory holds (`consumer-token`), given with
/// [`consumer_token_file`].
pub const CONSUMER_TOKEN: &str = "test-consumer-token-0123456789";

/// The path of the consumer token file of a node started in `dir`, for `--consumer-token-file`.
pub fn consumer_token_file(dir: &Path) -> String {
    dir.join("consumer-token").to_string_lossy().into_owned()
}

/// A node started in `dir` with the consumer token file of its directory (`--consumer-token-file`) and `extra`.
pub fn start_with_consumers(dir: &Path, server_id: u32, extra: &[&str]) -> NodeProc {
    let file = consumer_token_file(dir);
    let mut args = vec!["--consumer-token-file", file.as_str()];
    args.extend_from_slice(extra);
    NodeProc::start(dir, server_id, &args)
}

/// POST with the admin token, which must answer 200; the answer's body.
pub fn post_ok(node: &NodeProc, path: &str, body: serde_json::Value) -> serde_json::Value {
    let (code, resp) = node.post(path, body, Some(TOKEN));
    assert_eq!(code, 200, "POST {path} on server {}: {resp}", node.server_id);
    resp
}

/// `replica` replicates from `master` over connection `name` (CHANGE MASTER with `use_gtid`, then start).
pub fn replicate_with(replica: &NodeProc, name: &str, master: &NodeProc, use_gtid: &str) {
    post_ok(
        replica,
        &format!("/v1/replication/{name}/change-master"),
        serde_json::json!({"master": master.listen, "use_gtid": use_gtid}),
    );
    post_ok(replica, &format!("/v1/replication/{name}/start"), serde_json::json!({}));
}

pub struct NodeProc {
    child: Child,
    pub server_id: u32,
    pub listen: String,
    pub admin: String,
    pub dir: PathBuf,
    pub extra: Vec<String>,
    /// Started with `--admin-token-file` (holding [`TOKEN`]).
    pub with_token: bool,
}

/// An admin API answer with what the authentication tests look at.
pub struct Answer {
    pub status: u16,
    pub www_authenticate: Option<String>,
    pub body: serde_json::Value,
}

impl NodeProc {
    /// Starts `ferryd` with its data in `dir/data` and the admin token in `dir/token`.
    pub fn start(dir: &Path, server_id: u32, extra: &[&str]) -> NodeProc {
        Self::start_at(dir, server_id, "127.0.0.1:0", extra)
    }

    /// Like [`NodeProc::start`] with a given protocol address (to come back on the same port).
    pub fn start_at(dir: &Path, server_id: u32, listen: &str, extra: &[&str]) -> NodeProc {
        Self::launch(dir, server_id, listen, extra, true)
    }

    /// Like [`NodeProc::start`] without `--admin-token-file`.
    pub fn start_without_token(dir: &Path, server_id: u32, extra: &[&str]) -> NodeProc {
        Self::launch(dir, server_id, "127.0.0.1:0", extra, false)
    }

    fn launch(dir: &Path, server_id: u32, listen: &str, extra: &[&str], with_token: bool) -> NodeProc {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("token"), TOKEN).unwrap();
        std::fs::write(dir.join("consumer-token"), CONSUMER_TOKEN).unwrap();
        let stderr = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("ferryd.log")).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_ferryd"));
        command
            .args(["--server-id", &server_id.to_string(), "--listen", listen, "--admin", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(dir.join("data"));
        if with_token {
            command.arg("--admin-token-file").arg(dir.join("token"));
        }
        let mut child = command.args(extra).stdout(Stdio::piped()).stderr(stderr).spawn().expect("start ferryd");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
        let ready: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|_| {
            let log = std::fs::read_to_string(dir.join("ferryd.log")).unwrap_or_default();
            panic!("ferryd did not report ready; its log:\n{log}")
        });
        NodeProc {
            child,
            server_id,
            listen: ready["listen"].as_str().unwrap().to_string(),
            admin: ready["admin"].as_str().unwrap().to_string(),
            dir: dir.to_path_buf(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            with_token,
        }
    }

    /// Starts it again on the same data directory.
    pub fn restart(&mut self) {
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        let fresh = NodeProc::launch(&self.dir.clone(), self.server_id, "127.0.0.1:0", &extra, self.with_token);
        // The old process is gone (killed or stopped); dropping it just reaps nothing.
        drop(std::mem::replace(self, fresh));
    }

    pub fn sigkill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM and wait for a clean exit (within a generous deadline).
    pub fn stop(&mut self) {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let log = self.dir.join("ferryd.log");
        let exit = wait_for(
            "ferryd's exit after SIGTERM",
            Duration::from_secs(120),
            || self.child.try_wait().unwrap(),
            Option::is_some,
            || format!("\n{}", std::fs::read_to_string(&log).unwrap_or_default()),
        )
        .expect("exited");
        assert!(exit.success(), "ferryd exited with {exit}");
    }

    /// [`eventually`] (within [`EVENTUALLY`]) about this node: a failure shows its log too.
    pub fn eventually<V: std::fmt::Debug>(&self, what: &str, probe: impl FnMut() -> V, done: impl Fn(&V) -> bool) -> V {
        wait_for(what, EVENTUALLY, probe, done, || format!("\n{}", self.log()))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("ferryd.log")).unwrap_or_default()
    }

    pub fn binlog_dir(&self) -> PathBuf {
        self.dir.join("data").join("binlog")
    }

    /// Every transaction of the node's binlog, in binlog order (read from its files).
    pub fn binlog_transactions(&self) -> Vec<ferry_core::binlog::reader::Transaction> {
        use ferry_core::binlog::reader::{FileReader, Item, TransactionReader};
        let mut out = Vec::new();
        for path in ferry_core::binlog::files_at(&self.binlog_dir()).unwrap() {
            for item in TransactionReader::new(FileReader::open(&path).unwrap()) {
                if let Item::Transaction(t) = item.unwrap() {
                    out.push(t);
                }
            }
        }
        out
    }

    /// The GTIDs of the node's binlog, in binlog order.
    pub fn binlog_gtids(&self) -> Vec<ferry_core::gtid::Gtid> {
        self.binlog_transactions().iter().map(|t| t.gtid()).collect()
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.admin, path)
    }

    /// GET with the admin token; returns the status code and the JSON body.
    pub fn get(&self, path: &str) -> (u16, serde_json::Value) {
        let answer = self.get_as(path, Some(TOKEN));
        (answer.status, answer.body)
    }

    /// GET with the given bearer token, or none.
    pub fn get_as(&self, path: &str, token: Option<&str>) -> Answer {
        off_runtime(|| {
            let mut req = http().get(self.url(path));
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            let resp = req.send().unwrap();
            let www_authenticate = resp
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .map(|v| v.to_str().unwrap_or_default().to_string());
            Answer {
                status: resp.status().as_u16(),
                www_authenticate,
                body: resp.json().unwrap_or(serde_json::Value::Null),
            }
        })
    }

    /// GET with the admin token; the body as text (`/metrics`).
    pub fn get_text(&self, path: &str) -> String {
        off_runtime(|| http().get(self.url(path)).bearer_auth(TOKEN).send().unwrap().text().unwrap())
    }

    /// GET with the admin token; the status code and the body's bytes (a download).
    pub fn get_bytes(&self, path: &str) -> (u16, Vec<u8>) {
        off_runtime(|| {
            let resp = http().get(self.url(path)).bearer_auth(TOKEN).send().unwrap();
            (resp.status().as_u16(), resp.bytes().unwrap().to_vec())
        })
    }

    pub fn status(&self) -> serde_json::Value {
        let (code, body) = self.get("/v1/status");
        assert_eq!(code, 200);
        body
    }

    /// POST with an optional bearer token; returns the status code and the JSON body.
    pub fn post(&self, path: &str, body: serde_json::Value, token: Option<&str>) -> (u16, serde_json::Value) {
        off_runtime(|| {
            let mut req = http().post(self.url(path)).json(&body);
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            let resp = req.send().unwrap();
            let status = resp.status().as_u16();
            (status, resp.json().unwrap_or(serde_json::Value::Null))
        })
    }

    /// POST with the admin token and extra headers; returns the status code and the JSON body.
    #[allow(dead_code)]
    pub fn post_with(&self, path: &str, body: serde_json::Value, headers: &[(&str, &str)]) -> (u16, serde_json::Value) {
        off_runtime(|| {
            let mut req = http().post(self.url(path)).json(&body).bearer_auth(TOKEN);
            for (name, value) in headers {
                req = req.header(*name, *value);
            }
            let resp = req.send().unwrap();
            let status = resp.status().as_u16();
            (status, resp.json().unwrap_or(serde_json::Value::Null))
        })
    }

    /// PATCH with the admin token; returns the status code and the JSON body.
    pub fn patch(&self, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        off_runtime(|| {
            let resp = http().patch(self.url(path)).json(&body).bearer_auth(TOKEN).send().unwrap();
            let status = resp.status().as_u16();
            (status, resp.json().unwrap_or(serde_json::Value::Null))
        })
    }

    /// DELETE with the admin token; returns the status code and the JSON body.
    pub fn delete_req(&self, path: &str) -> (u16, serde_json::Value) {
        off_runtime(|| {
            let resp = http().delete(self.url(path)).bearer_auth(TOKEN).send().unwrap();
            let status = resp.status().as_u16();
            (status, resp.json().unwrap_or(serde_json::Value::Null))
        })
    }

    pub fn client(&self) -> ferry_client::Client {
        rt().block_on(ferry_client::Client::connect(&self.listen)).unwrap()
    }
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long a test waits for a node to reach what it should reach, unless the test says otherwise.
pub const EVENTUALLY: Duration = Duration::from_secs(30);
/// How often a wait looks again.
const EVENTUALLY_POLL: Duration = Duration::from_millis(10);

/// Waits until `done` holds on what `probe` sees, looking every few milliseconds, and returns what it saw then.
/// Past `within` the test fails naming `what` it waited for, with the last thing seen. (Every wait of these
/// tests is this one; [`NodeProc::eventually`] adds the node's log to the failure.)
pub fn eventually<V: std::fmt::Debug>(
    what: &str,
    within: Duration,
    probe: impl FnMut() -> V,
    done: impl Fn(&V) -> bool,
) -> V {
    wait_for(what, within, probe, done, String::new)
}

fn wait_for<V: std::fmt::Debug>(
    what: &str,
    within: Duration,
    mut probe: impl FnMut() -> V,
    done: impl Fn(&V) -> bool,
    context: impl Fn() -> String,
) -> V {
    let deadline = std::time::Instant::now() + within;
    loop {
        let seen = probe();
        if done(&seen) {
            return seen;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {within:?}; last seen: {seen:?}{}",
            context()
        );
        std::thread::sleep(EVENTUALLY_POLL);
    }
}

/// A runtime for driving the async client from plain tests.
pub fn rt() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap())
}

/// Runs blocking HTTP on a thread of its own, so it also works from inside async test code.
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join().unwrap())
}

/// An HTTP client whose timeout outlasts the longest wait a test asks a node for.
fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder().timeout(std::time::Duration::from_secs(180)).build().unwrap()
}

/// Each domain's GTIDs in the same order on both servers, each exactly once.
pub fn assert_same_order_per_domain(master: &NodeProc, replica: &NodeProc) {
    let per_domain = |gtids: Vec<ferry_core::gtid::Gtid>| {
        let mut m: std::collections::BTreeMap<u32, Vec<ferry_core::gtid::Gtid>> = std::collections::BTreeMap::new();
        let mut seen = std::collections::HashSet::new();
        for g in gtids {
            assert!(seen.insert(g), "{g} is in the binlog twice");
            m.entry(g.domain).or_default().push(g);
        }
        m
    };
    assert_eq!(per_domain(replica.binlog_gtids()), per_domain(master.binlog_gtids()));
}

/// What a change consumer of a test received, and the nodes it subscribed to, in order.
#[derive(Default)]
pub struct Received {
    pub changes: Vec<ferry_client::Change>,
    pub nodes: Vec<String>,
}

/// Follows the master among `nodes` (`MasterSubscription` with `options`), recording into `into`, until `until`
/// changes are in it; returns the position to resume from.
pub async fn follow(
    nodes: Vec<String>,
    options: ferry_client::FollowOptions,
    name: &str,
    into: std::sync::Arc<std::sync::Mutex<Received>>,
    until: usize,
) -> ferry_core::gtid::GtidPosition {
    use ferry_client::Followed;
    let mut changes = ferry_client::MasterSubscription::new(&nodes, options).unwrap();
    while into.lock().unwrap().changes.len() < until {
        match changes.next().await {
            Ok(Followed::Change(c)) => into.lock().unwrap().changes.push(c),
            Ok(Followed::Subscribed { node, .. }) => into.lock().unwrap().nodes.push(node),
            Ok(Followed::NoMaster { .. }) => {}
            Err(e) => panic!("{name}: following ended: {e}"),
        }
    }
    changes.position().unwrap().clone()
}

//! Nodes a self-contained benchmark starts for itself: `ferryd` processes in a temporary directory, their
//! protocol and admin addresses, and the few admin calls benchmarks need.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use serde_json::{json, Value};

/// Token the benchmark's nodes share (replication authenticates with it).
pub const TOKEN: &str = "ferry-bench-admin-token-0123456789";

pub struct BenchNode {
    child: Child,
    pub listen: String,
    pub admin: String,
    http: reqwest::Client,
}

/// The `ferryd` beside this executable, unless `--ferryd` names another.
pub fn ferryd_path(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => std::env::current_exe()?.with_file_name("ferryd"),
    };
    if !path.exists() {
        bail!("{} not found: build it (cargo build --release -p ferryd) or pass --ferryd", path.display());
    }
    Ok(path)
}

impl BenchNode {
    pub fn start(ferryd: &Path, dir: &Path, server_id: u32, extra: &[&str]) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("token"), TOKEN)?;
        let log = std::fs::File::create(dir.join("ferryd.log"))?;
        let mut child = Command::new(ferryd)
            .args(["--server-id", &server_id.to_string(), "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--admin-token-file")
            .arg(dir.join("token"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", ferryd.display()))?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line)?;
        let ready: Value = serde_json::from_str(&line)
            .with_context(|| format!("ferryd did not start; see {}", dir.join("ferryd.log").display()))?;
        Ok(BenchNode {
            child,
            listen: ready["listen"].as_str().unwrap_or_default().to_string(),
            admin: ready["admin"].as_str().unwrap_or_default().to_string(),
            http: reqwest::Client::builder().timeout(Duration::from_secs(120)).build()?,
        })
    }

    /// The node's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let resp = self.http.get(format!("http://{}{path}", self.admin)).bearer_auth(TOKEN).send().await?;
        let status = resp.status();
        let body: Value = resp.json().await?;
        if !status.is_success() {
            bail!("GET {path}: {status} {body}");
        }
        Ok(body)
    }

    pub async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        let resp = self.http.post(format!("http://{}{path}", self.admin)).bearer_auth(TOKEN).json(&body).send().await?;
        let status = resp.status();
        let body: Value = resp.json().await?;
        if !status.is_success() {
            bail!("POST {path}: {status} {body}");
        }
        Ok(body)
    }

    pub async fn binlog_pos(&self) -> anyhow::Result<String> {
        Ok(self.get("/v1/status").await?["gtid_binlog_pos"].as_str().unwrap_or_default().to_string())
    }

    /// Waits until the node's binlog position is ahead of `position`.
    pub async fn wait_for(&self, position: &str, timeout: Duration) -> anyhow::Result<()> {
        let body = json!({"position": position, "timeout_ms": timeout.as_millis() as u64});
        let resp = self.post("/v1/wait-for-position", body).await?;
        if resp["reached"] != true {
            bail!("position {position} not reached within {timeout:?} (at {})", resp["position"]);
        }
        Ok(())
    }

    /// The first replication connection's status.
    pub async fn connection(&self) -> anyhow::Result<Value> {
        Ok(self.get("/v1/replication").await?["connections"][0].clone())
    }
}

impl Drop for BenchNode {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

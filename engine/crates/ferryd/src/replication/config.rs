//! A replication connection's settings (CHANGE MASTER), persisted with the node's data so that connections that
//! were running start again after a restart.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Which position a connection starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UseGtid {
    /// gtid_slave_pos: what replication applied (the normal case).
    #[default]
    SlavePos,
    /// gtid_current_pos: also this server's own newer transactions (a demoted master joining its successor).
    CurrentPos,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionConfig {
    /// The master's protocol address, `host:port`.
    pub master: String,
    #[serde(default)]
    pub use_gtid: UseGtid,
    /// Skip a GTID already applied (multi-path topologies) instead of stopping on it.
    #[serde(default)]
    pub ignore_duplicates: bool,
    /// Apply each transaction no sooner than this many seconds after its commit on the master.
    #[serde(default)]
    pub delay_s: u64,
    /// Heartbeat interval asked of the master.
    #[serde(default = "default_heartbeat_ms")]
    pub heartbeat_ms: u32,
    /// Parallel apply: mode and workers.
    #[serde(default)]
    pub parallel: super::applier::ParallelConfig,
    /// DO_DOMAIN_IDS / IGNORE_DOMAIN_IDS: the domains applied.
    #[serde(default, flatten)]
    pub filter: super::filter::DomainFilter,
    /// sql_slave_skip_counter: transactions the SQL side passes over when the connection next starts.
    #[serde(default)]
    pub skip_counter: u64,
    /// Whether the connection is started (it starts again with the node).
    #[serde(default)]
    pub running: bool,
}

pub fn default_heartbeat_ms() -> u32 {
    1000
}

/// The file holding every connection's settings.
pub fn load(path: &Path) -> anyhow::Result<BTreeMap<String, ConnectionConfig>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(serde_json::from_str(&text)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(e.into()),
    }
}

/// Replaces the file atomically.
pub fn save(path: &Path, configs: &BTreeMap<String, ConnectionConfig>) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_vec_pretty(configs)?;
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&text)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    Ok(())
}

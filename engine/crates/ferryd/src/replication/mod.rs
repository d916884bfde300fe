//! Replication connections of a node (multi-source: several named connections, one per master).
//!
//! - [`config`]: a connection's settings (CHANGE MASTER), persisted in `replication.json`.
//! - [`filter`]: the domain filters (`DO_DOMAIN_IDS` / `IGNORE_DOMAIN_IDS`).
//! - [`io`]: the IO side: the master's binlog into the relay log, reconnecting with backoff.
//! - [`applier`]: the SQL side: the relay log applied through the node, UNTIL and delay.
//! - [`shared`]: what the two sides and the manager share.
//! - [`status`]: what a connection reports.
//! - [`until`]: START ... UNTIL: which transactions are applied, and when the position is reached.
//! - `sim` (tests): the seeded replica simulation — intake, SQL side and crash-safe position on a simulated
//!   network, disk and clock.
//!
//! On every start a connection discards its relay log and resumes from the node's crash-safe gtid_slave_pos
//! (or gtid_current_pos when so configured).

pub mod applier;
pub mod config;
pub mod filter;
pub mod io;
pub mod shared;
#[cfg(test)]
mod sim;
pub mod status;
pub mod until;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Weak};

use ferry_client::Client;
use ferry_core::binlog::writer::now_us;
use ferry_core::gtid::GtidPosition;
use ferry_core::node::Node;
use ferry_core::protocol::{Request, Response};
use ferry_core::relay::{relay_file_bytes_for, RelayWriter};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use self::config::{ConnectionConfig, UseGtid};
use self::shared::Shared;
use self::status::{ConnectionStatus, DomainLag, IoState, ReplError, SqlState};
use crate::auth::AdminToken;

/// Why a replication command was refused.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Failed(String),
}

/// CHANGE MASTER: where to replicate from and from which position.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeMaster {
    pub master: String,
    #[serde(default)]
    pub use_gtid: UseGtid,
    /// An explicit GTID position: becomes gtid_slave_pos.
    pub position: Option<String>,
    /// A legacy binlog coordinate of the master, translated by the master into a GTID position.
    pub file: Option<String>,
    pub offset: Option<u64>,
    #[serde(default)]
    pub ignore_duplicates: bool,
    #[serde(default)]
    pub delay_s: u64,
    #[serde(default = "config::default_heartbeat_ms")]
    pub heartbeat_ms: u32,
    /// `serial`, `conservative` or `optimistic`.
    #[serde(default)]
    pub parallel_mode: applier::ParallelMode,
    /// Total apply workers (1 applies serially whatever the mode).
    #[serde(default = "one")]
    pub workers: usize,
    /// The most workers one domain may use at once.
    #[serde(default = "one")]
    pub domain_workers_max: usize,
    /// DO_DOMAIN_IDS: apply only these domains (the others are passed over, their GTIDs still recorded).
    #[serde(default)]
    pub do_domain_ids: Vec<u32>,
    /// IGNORE_DOMAIN_IDS: pass these domains over. Not together with `do_domain_ids`.
    #[serde(default)]
    pub ignore_domain_ids: Vec<u32>,
}

fn one() -> usize {
    1
}

/// Most apply workers a connection may have.
pub const WORKERS_MAX: usize = 256;

/// One connection as the status API shows it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ConnectionView {
    pub name: String,
    pub master: String,
    pub use_gtid: UseGtid,
    pub running: bool,
    pub io_state: IoState,
    pub sql_state: SqlState,
    pub received_position: String,
    pub applied_position: String,
    pub master_position: String,
    pub lag: BTreeMap<u32, DomainLag>,
    pub transactions_received: u64,
    pub transactions_applied: u64,
    pub duplicates_skipped: u64,
    pub conflicts: u64,
    pub retries: u64,
    pub reconnects: u64,
    pub last_heartbeat_us: Option<u64>,
    /// How often an idle master sends a heartbeat on this connection (CHANGE MASTER's heartbeat_ms).
    pub heartbeat_ms: u32,
    pub parallel: applier::ParallelConfig,
    pub delay_s: u64,
    pub ignore_duplicates: bool,
    /// DO_DOMAIN_IDS / IGNORE_DOMAIN_IDS.
    pub do_domain_ids: Vec<u32>,
    pub ignore_domain_ids: Vec<u32>,
    /// sql_slave_skip_counter: set and stopped, what the next start passes over; running, what is left of it.
    pub skip_counter: u64,
    /// Transactions passed over by the skip counter and by the domain filters since the connection started.
    pub transactions_skipped: u64,
    pub transactions_filtered: u64,
    pub until: Option<String>,
    pub last_error: Option<ReplError>,
    /// True while the IO side waits for the SQL side to free relay log space (`io_state` stays `connected`).
    pub waiting_for_relay_space: bool,
    /// What the relay log's files take on disk now (bounded by `--relay-log-space-bytes-max`), and the most
    /// at once since the connection started.
    pub relay_log_space_bytes: u64,
    pub relay_log_space_bytes_peak: u64,
    /// Bytes the SQL side has read ahead of what it applied (bounded by `--read-ahead-bytes-max`), and the most
    /// at once since the connection started.
    pub read_ahead_bytes: u64,
    pub read_ahead_bytes_peak: u64,
}

struct Running {
    io: tokio::task::JoinHandle<()>,
    sql: std::thread::JoinHandle<()>,
}

struct Connection {
    config: ConnectionConfig,
    shared: Arc<Shared>,
    running: Option<Running>,
}

impl Connection {
    /// Whether either side still runs (a connection stopped by an error or UNTIL keeps its finished handles).
    fn is_running(&self) -> bool {
        self.running.as_ref().is_some_and(|r| !r.io.is_finished() || !r.sql.is_finished())
    }
}

pub struct Replication {
    node: Arc<Node>,
    token: Option<AdminToken>,
    advertised: crate::Advertised,
    config_path: PathBuf,
    relay_root: PathBuf,
    connections: Mutex<BTreeMap<String, Connection>>,
    me: Weak<Replication>,
}

fn check_name(name: &str) -> Result<(), CommandError> {
    let ok =
        !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(CommandError::Invalid(format!(
            "connection name {name:?} must be 1 to 64 characters of letters, digits, '_' and '-'"
        )))
    }
}

/// Workers 1 to [`WORKERS_MAX`], and at most that many per domain.
fn check_parallel(parallel: &applier::ParallelConfig) -> Result<(), CommandError> {
    let (workers, domain) = (parallel.workers, parallel.domain_workers_max);
    if workers == 0 || workers > WORKERS_MAX || domain == 0 || domain > workers {
        return Err(CommandError::Invalid(format!(
            "workers must be 1 to {WORKERS_MAX} and domain_workers_max 1 to workers (got {workers} and {domain})"
        )));
    }
    Ok(())
}

impl Replication {
    /// Loads the connections' settings and starts those that were running (unless `held`: why none may start,
    /// an unfinished clone).
    pub fn load(
        node: Arc<Node>,
        token: Option<AdminToken>,
        advertised: crate::Advertised,
        held: Option<String>,
    ) -> anyhow::Result<Arc<Self>> {
        let data_dir = node.config().data_dir.clone();
        let config_path = data_dir.join("replication.json");
        let configs = config::load(&config_path)?;
        let repl = Arc::new_cyclic(|me: &Weak<Replication>| Replication {
            node,
            token,
            advertised,
            config_path,
            relay_root: data_dir.join("relay"),
            connections: Mutex::new(BTreeMap::new()),
            me: me.clone(),
        });
        {
            let mut conns = repl.connections.lock();
            for (name, config) in configs {
                let shared = Arc::new(Shared::new(&name, ConnectionStatus::default(), repl.me.clone()));
                conns.insert(name, Connection { config, shared, running: None });
            }
            repl.node.set_replicates(!conns.is_empty());
        }
        let to_start: Vec<String> =
            repl.connections.lock().iter().filter(|(_, c)| c.config.running).map(|(n, _)| n.clone()).collect();
        if let Some(why) = held.filter(|_| !to_start.is_empty()) {
            tracing::warn!(connections = ?to_start, "not restarting replication: {why}");
            return Ok(repl);
        }
        for name in to_start {
            if let Err(e) = repl.start(&name, None, false) {
                tracing::error!(connection = %name, "could not restart replication: {e}");
            }
        }
        Ok(repl)
    }

    fn save(&self, conns: &BTreeMap<String, Connection>) -> Result<(), CommandError> {
        let configs: BTreeMap<String, ConnectionConfig> =
            conns.iter().map(|(n, c)| (n.clone(), c.config.clone())).collect();
        let saved = config::save(&self.config_path, &configs)
            .map_err(|e| CommandError::Failed(format!("saving replication settings: {e}")));
        self.node.set_replicates(!conns.is_empty());
        saved
    }

    /// CHANGE MASTER for connection `name` (created when new). The connection must be stopped.
    pub async fn change_master(&self, name: &str, req: ChangeMaster) -> Result<(), CommandError> {
        check_name(name)?;
        if req.master.parse::<std::net::SocketAddr>().is_err() && !req.master.contains(':') {
            return Err(CommandError::Invalid(format!(
                "master {:?} must be host:port of the master's protocol listener",
                req.master
            )));
        }
        if self.connections.lock().get(name).is_some_and(Connection::is_running) {
            return Err(CommandError::Conflict(format!("connection {name:?} is running: stop it first")));
        }
        let explicit = match (&req.position, &req.file, req.offset) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(CommandError::Invalid("give either position or file and offset, not both".into()))
            }
            (Some(text), None, None) => {
                Some(text.parse::<GtidPosition>().map_err(|e| CommandError::Invalid(e.to_string()))?)
            }
            (None, Some(file), Some(offset)) => Some(self.translate(&req.master, file, offset).await?),
            (None, Some(_), None) | (None, None, Some(_)) => {
                return Err(CommandError::Invalid("a legacy coordinate needs both file and offset".into()))
            }
            (None, None, None) => None,
        };
        if let Some(position) = &explicit {
            if self.connections.lock().values().any(Connection::is_running) {
                return Err(CommandError::Conflict(
                    "setting gtid_slave_pos needs every replication connection stopped".into(),
                ));
            }
            let node = self.node.clone();
            let position = position.clone();
            tokio::task::spawn_blocking(move || node.set_slave_position(&position))
                .await
                .map_err(|e| CommandError::Failed(e.to_string()))?
                .map_err(|e| CommandError::Failed(e.to_string()))?;
        }
        let parallel = applier::ParallelConfig {
            mode: req.parallel_mode,
            workers: req.workers,
            domain_workers_max: req.domain_workers_max,
        };
        check_parallel(&parallel)?;
        let filter =
            filter::DomainFilter::new(&req.do_domain_ids, &req.ignore_domain_ids).map_err(CommandError::Invalid)?;
        let skip_counter = self.connections.lock().get(name).map_or(0, |c| c.config.skip_counter);
        let config = ConnectionConfig {
            filter,
            skip_counter,
            parallel,
            master: req.master,
            use_gtid: req.use_gtid,
            ignore_duplicates: req.ignore_duplicates,
            delay_s: req.delay_s,
            heartbeat_ms: req.heartbeat_ms.clamp(50, 60_000),
            running: false,
        };
        let mut conns = self.connections.lock();
        let entry = conns.entry(name.to_string()).or_insert_with(|| Connection {
            config: config.clone(),
            shared: Arc::new(Shared::new(name, ConnectionStatus::default(), self.me.clone())),
            running: None,
        });
        entry.config = config;
        self.save(&conns)
    }

    /// Asks the master which GTID position a legacy (file, offset) of its binlog is.
    async fn translate(&self, master: &str, file: &str, offset: u64) -> Result<GtidPosition, CommandError> {
        let mut client =
            Client::connect(master).await.map_err(|e| CommandError::Failed(format!("connecting to {master}: {e}")))?;
        match client.call(&Request::PositionAt { file: file.to_string(), offset }).await {
            Ok(Response::Reached { position }) => position.parse().map_err(|e| CommandError::Failed(format!("{e}"))),
            Ok(other) => Err(CommandError::Failed(format!("unexpected answer from {master}: {other:?}"))),
            Err(e) => Err(CommandError::Invalid(format!("{master} cannot translate {file}:{offset}: {e}"))),
        }
    }

    /// START (optionally UNTIL a position). Discards the relay log and resumes from gtid_slave_pos.
    pub fn start(&self, name: &str, until: Option<GtidPosition>, sql_paused: bool) -> Result<(), CommandError> {
        let mut conns = self.connections.lock();
        let conn =
            conns.get_mut(name).ok_or_else(|| CommandError::NotFound(format!("no replication connection {name:?}")))?;
        if let Some(running) = &conn.running {
            if !running.io.is_finished() || !running.sql.is_finished() {
                return Err(CommandError::Conflict(format!("connection {name:?} is already running")));
            }
        }
        let relay_dir = self.relay_root.join(name);
        let limits = self.node.config().limits;
        let relay_file_bytes = relay_file_bytes_for(limits.relay_log_space_bytes_max);
        let relay =
            RelayWriter::create_on(self.node.config().fs.clone(), &relay_dir, relay_file_bytes).map_err(|e| {
                // A relay log that cannot be written is a storage failure of the node (fail-stop).
                let why = self.node.fail_storage(format!("relay log write: {e}"));
                CommandError::Failed(format!("{e} (storage failed: {why})"))
            })?;
        let reader = relay.reader().map_err(|e| CommandError::Failed(e.to_string()))?;
        let start = match conn.config.use_gtid {
            UseGtid::SlavePos => self.node.slave_position(),
            UseGtid::CurrentPos => self.node.current_position(),
        };
        let skip_counter = std::mem::take(&mut conn.config.skip_counter);
        let mut status = ConnectionStatus { until: until.clone(), skip_counter, ..ConnectionStatus::default() };
        let previous = conn.shared.status.lock().clone();
        status.reconnects = previous.reconnects;
        let mut shared = Shared::new(name, status, self.me.clone());
        shared.relay_space = relay.space();
        let shared = Arc::new(shared);
        shared.set_sql_paused(sql_paused);
        let clock = self.node.config().clock.clone();
        let io = io::IoSide {
            intake: io::Intake {
                shared: shared.clone(),
                relay,
                relay_space_bytes_max: limits.relay_log_space_bytes_max,
                position: start.clone(),
                node: self.node.clone(),
                clock: clock.clone(),
            },
            master: conn.config.master.clone(),
            server_id: self.node.config().server_id,
            heartbeat_ms: conn.config.heartbeat_ms,
            token: self.token.clone(),
            advertised: self.advertised.clone(),
        };
        let sql = applier::SqlSide {
            shared: shared.clone(),
            node: self.node.clone(),
            relay: reader,
            ignore_duplicates: conn.config.ignore_duplicates,
            delay_s: conn.config.delay_s,
            until: until.map(until::Until::new),
            parallel: conn.config.parallel,
            read_ahead_bytes_max: limits.read_ahead_bytes_max,
            filter: conn.config.filter.clone(),
            skip_remaining: skip_counter,
            clock,
        };
        let io = tokio::spawn(io.run());
        let sql = std::thread::Builder::new()
            .name(format!("sql-{name}"))
            .spawn(move || sql.run())
            .map_err(|e| CommandError::Failed(format!("cannot start the SQL side: {e}")))?;
        tracing::info!(connection = %name, master = %conn.config.master, from = %start, "replication started");
        conn.shared = shared;
        conn.running = Some(Running { io, sql });
        conn.config.running = true;
        self.save(&conns)
    }

    /// SET sql_slave_skip_counter for a stopped connection: its next start passes over that many transactions
    /// (in the relay log's order), recording their GTIDs in gtid_slave_pos. As MariaDB (error 1966), refused when
    /// the position the connection starts from has several domains: which transaction comes next is then not
    /// defined; set gtid_slave_pos explicitly (CHANGE MASTER with a position) instead.
    pub fn set_skip_counter(&self, name: &str, count: u64) -> Result<(), CommandError> {
        let mut conns = self.connections.lock();
        let conn =
            conns.get_mut(name).ok_or_else(|| CommandError::NotFound(format!("no replication connection {name:?}")))?;
        if conn.is_running() {
            return Err(CommandError::Conflict(format!(
                "connection {name:?} is running: stop it before setting its skip counter"
            )));
        }
        let start = match conn.config.use_gtid {
            UseGtid::SlavePos => self.node.slave_position(),
            UseGtid::CurrentPos => self.node.current_position(),
        };
        if count > 0 && start.iter().count() > 1 {
            return Err(CommandError::Conflict(format!(
                "connection {name:?} starts from {start}, which has several domains: the skip counter cannot say \
                 which transaction comes next; set gtid_slave_pos past the transaction instead (change-master \
                 with a position)"
            )));
        }
        conn.config.skip_counter = count;
        self.save(&conns)
    }

    /// Changes a connection's parallel apply (mode and workers), running or not, keeping its other settings. A
    /// running connection's SQL side takes the change between two batches (each is committed as one group, so
    /// none is in flight then): it goes on from where it is, skipping and repeating nothing, and its IO side never
    /// stops. Saved, so the next start and the node's restart keep it.
    pub fn set_parallel(&self, name: &str, parallel: applier::ParallelConfig) -> Result<bool, CommandError> {
        check_parallel(&parallel)?;
        let mut conns = self.connections.lock();
        let conn =
            conns.get_mut(name).ok_or_else(|| CommandError::NotFound(format!("no replication connection {name:?}")))?;
        let before = conn.config.parallel;
        conn.config.parallel = parallel;
        if let Err(e) = self.save(&conns) {
            if let Some(conn) = conns.get_mut(name) {
                conn.config.parallel = before;
            }
            return Err(e);
        }
        let conn = conns.get(name).expect("the connection is still there: the lock is held");
        let running = conn.is_running();
        if running {
            conn.shared.change_parallel(parallel);
        }
        tracing::info!(connection = %name, ?before, ?parallel, running, "parallel apply changed");
        Ok(running)
    }

    /// Lets a connection started with `sql_paused` apply.
    pub fn resume_sql(&self, name: &str) -> Result<(), CommandError> {
        let conns = self.connections.lock();
        let conn =
            conns.get(name).ok_or_else(|| CommandError::NotFound(format!("no replication connection {name:?}")))?;
        conn.shared.set_sql_paused(false);
        Ok(())
    }

    /// STOP: both sides end; the connection stays configured.
    pub async fn stop(&self, name: &str) -> Result<(), CommandError> {
        let running = {
            let mut conns = self.connections.lock();
            let conn = conns
                .get_mut(name)
                .ok_or_else(|| CommandError::NotFound(format!("no replication connection {name:?}")))?;
            conn.config.running = false;
            conn.shared.request_stop();
            let running = conn.running.take();
            self.save(&conns)?;
            running
        };
        if let Some(r) = running {
            let _ = r.io.await;
            let _ = tokio::task::spawn_blocking(move || r.sql.join()).await;
        }
        Ok(())
    }

    /// RESET SLAVE ['name'] [ALL] of a stopped connection: deletes its relay log and clears what its last run
    /// left (positions received and applied, counters, last error, a pending skip counter); with `all` the
    /// connection itself goes too. gtid_slave_pos is left as it is, as in MariaDB (set it with change-master's
    /// `position`).
    pub fn reset(&self, name: &str, all: bool) -> Result<(), CommandError> {
        let mut conns = self.connections.lock();
        let conn =
            conns.get_mut(name).ok_or_else(|| CommandError::NotFound(format!("no replication connection {name:?}")))?;
        if conn.is_running() {
            return Err(CommandError::Conflict(format!("connection {name:?} is running: stop it before resetting it")));
        }
        let relay_dir = self.relay_root.join(name);
        match std::fs::remove_dir_all(&relay_dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(CommandError::Failed(format!("deleting the relay log {}: {e}", relay_dir.display()))),
        }
        if all {
            conns.remove(name);
        } else {
            conn.running = None;
            conn.config.skip_counter = 0;
            conn.shared = Arc::new(Shared::new(name, ConnectionStatus::default(), self.me.clone()));
        }
        tracing::info!(connection = %name, all, "replication connection reset");
        self.save(&conns)
    }

    /// Removes a (stopped or running) connection and its relay log.
    pub async fn remove(&self, name: &str) -> Result<(), CommandError> {
        self.stop(name).await?;
        let mut conns = self.connections.lock();
        conns.remove(name);
        let _ = std::fs::remove_dir_all(self.relay_root.join(name));
        self.save(&conns)
    }

    /// Stops every connection at shutdown, leaving their settings as they are (running ones start again).
    pub async fn shutdown(&self) {
        let running: Vec<Running> = {
            let mut conns = self.connections.lock();
            conns
                .values_mut()
                .filter_map(|c| {
                    c.shared.request_stop();
                    c.running.take()
                })
                .collect()
        };
        for r in running {
            let _ = r.io.await;
            let _ = tokio::task::spawn_blocking(move || r.sql.join()).await;
        }
    }

    /// A connection stopped itself (error or UNTIL): it is not restarted with the node.
    fn ended_by_itself(&self, name: &str) {
        let mut conns = self.connections.lock();
        if let Some(conn) = conns.get_mut(name) {
            conn.config.running = false;
            let _ = self.save(&conns);
        }
    }

    pub fn status(&self) -> Vec<ConnectionView> {
        let base = self.node.position();
        let now = now_us();
        self.connections
            .lock()
            .iter()
            .map(|(name, c)| {
                let s = c.shared.status.lock().clone();
                let running = !c.shared.stopping()
                    && c.running.as_ref().is_some_and(|r| !r.io.is_finished() || !r.sql.is_finished());
                ConnectionView {
                    name: name.clone(),
                    master: c.config.master.clone(),
                    use_gtid: c.config.use_gtid,
                    running,
                    io_state: s.io_state,
                    sql_state: s.sql_state,
                    received_position: s.received.to_string(),
                    applied_position: s.applied.to_string(),
                    master_position: s.master_position.to_string(),
                    lag: s.lag(&base, now),
                    transactions_received: s.transactions_received,
                    transactions_applied: s.transactions_applied,
                    duplicates_skipped: s.duplicates_skipped,
                    conflicts: s.conflicts,
                    retries: s.retries,
                    reconnects: s.reconnects,
                    parallel: c.config.parallel,
                    last_heartbeat_us: s.last_heartbeat_us,
                    heartbeat_ms: c.config.heartbeat_ms,
                    delay_s: c.config.delay_s,
                    ignore_duplicates: c.config.ignore_duplicates,
                    do_domain_ids: c.config.filter.do_domain_ids.iter().copied().collect(),
                    ignore_domain_ids: c.config.filter.ignore_domain_ids.iter().copied().collect(),
                    skip_counter: if running { s.skip_counter } else { c.config.skip_counter },
                    transactions_skipped: s.transactions_skipped,
                    transactions_filtered: s.transactions_filtered,
                    until: s.until.as_ref().map(|u| u.to_string()),
                    last_error: s.last_error.clone(),
                    waiting_for_relay_space: s.waiting_for_relay_space && running,
                    relay_log_space_bytes: c.shared.relay_space.bytes(),
                    relay_log_space_bytes_peak: s.relay_log_space_bytes_peak,
                    read_ahead_bytes: s.read_ahead_bytes,
                    read_ahead_bytes_peak: s.read_ahead_bytes_peak,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use ferry_core::node::NodeConfig;
    use serde_json::json;

    use super::*;

    fn replication(node: &Arc<Node>) -> Arc<Replication> {
        let advertised = crate::Advertised { listen: "127.0.0.1:7301".into(), admin: "127.0.0.1:7401".into() };
        Replication::load(node.clone(), None, advertised, None).unwrap()
    }

    fn request(body: serde_json::Value) -> ChangeMaster {
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn connection_names_are_1_to_64_letters_digits_underscores_and_dashes() {
        for good in ["a", "main", "from_m-2", &"x".repeat(64)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a b", "a/b", "é", &"x".repeat(65)] {
            assert!(matches!(check_name(bad), Err(CommandError::Invalid(_))), "{bad:?}");
        }
    }

    #[test]
    fn change_master_has_defaults_for_all_but_the_master_and_refuses_unknown_fields() {
        let req = request(json!({"master": "127.0.0.1:7301"}));
        assert_eq!(req.use_gtid, UseGtid::SlavePos);
        assert_eq!((req.workers, req.domain_workers_max, req.heartbeat_ms, req.delay_s), (1, 1, 1000, 0));
        assert_eq!(req.parallel_mode, applier::ParallelMode::Serial);
        assert!(!req.ignore_duplicates && req.do_domain_ids.is_empty() && req.ignore_domain_ids.is_empty());
        let unknown = serde_json::from_value::<ChangeMaster>(json!({"master": "h:1", "master_delay": 5}));
        assert!(unknown.is_err(), "a misspelt setting is refused, not ignored");
    }

    #[tokio::test]
    async fn change_master_refuses_what_it_cannot_honour_and_then_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(NodeConfig::new(2, dir.path()), None).unwrap();
        let repl = replication(&node);
        let refused = [
            ("a b", json!({"master": "127.0.0.1:1"}), "connection name"),
            ("a", json!({"master": "nohost"}), "host:port"),
            ("a", json!({"master": "h:1", "position": "0-1-1", "file": "f", "offset": 4}), "not both"),
            ("a", json!({"master": "h:1", "file": "f"}), "both file and offset"),
            ("a", json!({"master": "h:1", "position": "0-1"}), ""),
            ("a", json!({"master": "h:1", "workers": 0}), "workers must be"),
            ("a", json!({"master": "h:1", "workers": WORKERS_MAX + 1}), "workers must be"),
            ("a", json!({"master": "h:1", "workers": 2, "domain_workers_max": 3}), "domain_workers_max"),
            ("a", json!({"master": "h:1", "do_domain_ids": [1], "ignore_domain_ids": [2]}), ""),
        ];
        for (name, body, why) in refused {
            match repl.change_master(name, request(body.clone())).await {
                Err(CommandError::Invalid(message)) => assert!(message.contains(why), "{body}: {message}"),
                other => panic!("{body}: {other:?}"),
            }
        }
        assert!(repl.status().is_empty());
        assert_eq!(node.slave_position(), GtidPosition::new());
        assert!(!dir.path().join("replication.json").exists(), "nothing saved");
    }

    #[tokio::test]
    async fn a_connection_is_saved_shown_and_loaded_again_and_commands_name_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(NodeConfig::new(2, dir.path()), None).unwrap();
        let repl = replication(&node);
        let body = json!({
            "master": "127.0.0.1:7301", "parallel_mode": "optimistic", "workers": 4, "domain_workers_max": 2,
            "delay_s": 5, "heartbeat_ms": 10, "ignore_domain_ids": [3]
        });
        repl.change_master("a", request(body)).await.unwrap();
        repl.change_master("b", request(json!({"master": "127.0.0.1:7302", "position": "0-1-5,1-1-2"}))).await.unwrap();
        assert_eq!(node.slave_position().to_string(), "0-1-5,1-1-2", "an explicit position is gtid_slave_pos");
        let shown = |repl: &Replication| -> Vec<(String, String, applier::ParallelConfig, u64, u32, Vec<u32>)> {
            repl.status()
                .into_iter()
                .map(|c| {
                    assert!(!c.running && c.io_state == IoState::Stopped && c.sql_state == SqlState::Stopped);
                    (c.name, c.master, c.parallel, c.delay_s, c.heartbeat_ms, c.ignore_domain_ids)
                })
                .collect()
        };
        let optimistic =
            applier::ParallelConfig { mode: applier::ParallelMode::Optimistic, workers: 4, domain_workers_max: 2 };
        let expected = vec![
            ("a".to_string(), "127.0.0.1:7301".to_string(), optimistic, 5, 50, vec![3]),
            ("b".to_string(), "127.0.0.1:7302".to_string(), applier::ParallelConfig::default(), 0, 1000, vec![]),
        ];
        assert_eq!(shown(&repl), expected, "heartbeat_ms is clamped to 50 ms at least");
        // gtid_slave_pos has two domains: which transaction the skip counter would pass over is not defined.
        assert!(
            matches!(repl.set_skip_counter("a", 1), Err(CommandError::Conflict(m)) if m.contains("several domains"))
        );
        repl.set_skip_counter("a", 0).unwrap();
        drop(repl);
        let repl = replication(&node);
        assert_eq!(shown(&repl), expected, "the settings are kept in replication.json");
        repl.reset("a", true).unwrap();
        assert_eq!(repl.status().len(), 1);
        assert!(matches!(repl.reset("a", false), Err(CommandError::NotFound(_))));
        assert!(matches!(repl.start("a", None, false), Err(CommandError::NotFound(_))));
        assert!(matches!(repl.resume_sql("a"), Err(CommandError::NotFound(_))));
        assert!(matches!(repl.stop("a").await, Err(CommandError::NotFound(_))));
    }
}

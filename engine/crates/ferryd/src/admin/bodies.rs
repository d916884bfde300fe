//! The admin API's answers, one type per route's JSON body (`schema` publishes their JSON Schemas): what each
//! handler serializes, field for field. An `Option` that is always written (`null` when absent) is a plain
//! `Option`; one that is left out when absent says so with `skip_serializing_if`.

use std::collections::BTreeMap;

use ferry_core::binlog::listing::EventRow;
use ferry_core::node::{EventSummary, NodeStatus};
use ferry_core::store::TableChecksum;
use schemars::JsonSchema;
use serde::Serialize;

use crate::consumers::{ConsumerView, CutOff};
use crate::expiry::ExpiryStatus;
use crate::replicas::ReplicaInfo;
use crate::replication::applier::ParallelConfig;
use crate::replication::ConnectionView;

/// Every refusal: `{"error": {"code", "message"}}`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorDetail {
    /// A stable name (`bad_request`, `not_found`, `conflict`, `busy`, ...).
    pub code: String,
    pub message: String,
}

/// `GET /v1/health`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Health {
    pub ok: bool,
}

/// `POST /v1/fence`: the fencing token now the highest this node keeps in its scope.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Fenced {
    pub scope: String,
    pub token: u64,
}

/// `GET /v1/status`: the node's own status with its replication connections, connected replicas, change
/// consumers, binlog expiry and advertised addresses.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Status {
    #[serde(flatten)]
    pub node: NodeStatus,
    pub replication: Vec<ConnectionView>,
    pub replicas: Vec<ReplicaInfo>,
    pub consumers: Vec<ConsumerView>,
    pub binlog_expiry: ExpiryStatus,
    /// The protocol and admin addresses this node advertises.
    pub listen: String,
    pub admin: String,
    /// Present while a clone of this node is unfinished (copying, failed or cancelled): the node's data is
    /// incomplete, and it refuses client writes, leaving read-only and starting replication.
    pub clone_incomplete: Option<crate::clone::record::CloneRecord>,
    pub api_version: u32,
}

/// `POST /v1/read-only`: the flag in force.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadOnly {
    pub read_only: bool,
    pub commits_in_flight: u64,
}

/// `POST /v1/read-only` with `wait_for_in_flight_ms`, once every commit in flight had its answer: where client
/// writes stopped.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WritesStopped {
    pub read_only: bool,
    pub commits_in_flight: u64,
    /// Client commits in flight when read-only went on.
    pub in_flight_at_read_only: u64,
    /// The binlog position once they had their answers.
    pub gtid_binlog_pos: String,
    /// How long that took.
    pub waited_ms: f64,
}

/// `POST /v1/binlog/flush`: the new file; with `delete_domain_ids`, also what left the GTID state.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Flushed {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted_domain_ids: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_present: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gtid_binlog_state: Option<String>,
}

/// `POST /v1/binlog/purge`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Purged {
    pub purged: Vec<String>,
}

/// `POST /v1/binlog/reset`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BinlogReset {
    pub deleted: Vec<String>,
    pub file: String,
    pub gtid_binlog_state: String,
    pub gtid_slave_pos: String,
    pub reuse_seq_nos: bool,
}

/// `GET /v1/rewind/archives`: the archives of the transactions rewinds cut, oldest first (each downloadable at
/// `GET /v1/rewind/archives/{name}`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct RewindArchives {
    pub archives: Vec<String>,
}

/// `GET /v1/binlog/events`: newest first; `next_before` pages further (null on the last page).
#[derive(Debug, Serialize, JsonSchema)]
pub struct EventsPage {
    pub events: Vec<EventSummary>,
    pub next_before: Option<u64>,
}

/// `GET /v1/binlog/files/{file}/events`: `next_from` pages further (null on the last page).
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileEventsPage {
    pub file: String,
    pub events: Vec<EventRow>,
    pub next_from: Option<u64>,
}

/// `GET /v1/checksums`: per table, at one GTID position.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Checksums {
    pub position: String,
    pub tables: BTreeMap<String, TableChecksum>,
}

/// `GET /v1/replicas`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Replicas {
    pub replicas: Vec<ReplicaInfo>,
}

/// `GET /v1/consumers`: the consumers streaming now, the last ones cut off, and the bounds.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Consumers {
    pub consumers: Vec<ConsumerView>,
    pub cut_off: Vec<CutOff>,
    pub cut_off_total: u64,
    pub consumers_max: usize,
    pub stall_bytes_max: u64,
    pub buffer_bytes_max: u64,
}

/// `POST /v1/wait-for-position`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Waited {
    pub reached: bool,
    /// The node's position when the wait ended.
    pub position: String,
}

/// `GET /v1/replication`: the node's three positions and every connection.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Replication {
    pub gtid_slave_pos: String,
    pub gtid_current_pos: String,
    pub gtid_binlog_pos: String,
    pub connections: Vec<ConnectionView>,
}

/// `POST /v1/replication/{name}/change-master`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MasterChanged {
    pub connection: String,
    pub gtid_slave_pos: String,
}

/// `POST /v1/replication/{name}/start`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Started {
    pub connection: String,
    pub running: bool,
    pub sql_paused: bool,
}

/// `POST /v1/replication/{name}/resume-sql`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SqlResumed {
    pub connection: String,
    pub sql_paused: bool,
}

/// `POST /v1/replication/{name}/stop`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Stopped {
    pub connection: String,
    pub running: bool,
}

/// `DELETE /v1/replication/{name}`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Removed {
    pub connection: String,
    pub removed: bool,
}

/// `POST /v1/replication/{name}/skip-counter`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkipCounterSet {
    pub connection: String,
    pub skip_counter: u32,
}

/// `POST /v1/replication/{name}/parallel`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ParallelSet {
    pub connection: String,
    pub parallel: ParallelConfig,
    pub running: bool,
}

/// `POST /v1/replication/{name}/reset`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConnectionReset {
    pub connection: String,
    pub reset: bool,
    /// RESET SLAVE ALL: the connection's settings went too.
    pub removed: bool,
    pub gtid_slave_pos: String,
}

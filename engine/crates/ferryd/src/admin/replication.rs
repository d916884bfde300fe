//! The replication routes of the admin API, all under `/v1/replication`: the connections' status, CHANGE
//! MASTER, START (optionally UNTIL) and STOP, resuming a paused SQL side, the skip counter
//! (sql_slave_skip_counter), parallel apply changed online, RESET SLAVE and deleting a connection. Each handler parses, makes one call on
//! [`Replication`](crate::replication::Replication) and maps its answer; the token is checked by the router's
//! authentication layer before any of them runs.

use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{bodies, json_body, optional_json_body, ApiError, AppState};
use crate::replication::applier::{ParallelConfig, ParallelMode};
use crate::replication::{ChangeMaster, CommandError};

/// The routes, for the authenticated part of the router.
pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/replication", get(status))
        .route("/v1/replication/{name}", delete(remove_connection))
        .route("/v1/replication/{name}/change-master", post(change_master))
        .route("/v1/replication/{name}/start", post(start_connection))
        .route("/v1/replication/{name}/stop", post(stop_connection))
        .route("/v1/replication/{name}/resume-sql", post(resume_sql))
        .route("/v1/replication/{name}/skip-counter", post(set_skip_counter))
        .route("/v1/replication/{name}/parallel", post(set_parallel))
        .route("/v1/replication/{name}/reset", post(reset))
}

impl From<CommandError> for ApiError {
    fn from(e: CommandError) -> Self {
        match e {
            CommandError::NotFound(m) => ApiError::new(StatusCode::NOT_FOUND, "not_found", m),
            CommandError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "conflict", m),
            CommandError::Invalid(m) => ApiError::bad_request(m),
            CommandError::Failed(m) => ApiError::internal(m),
        }
    }
}

/// `GET /v1/replication`: the node's three positions and every connection.
async fn status(State(s): State<AppState>) -> Json<bodies::Replication> {
    Json(bodies::Replication {
        gtid_slave_pos: s.node.slave_position().to_string(),
        gtid_current_pos: s.node.current_position().to_string(),
        gtid_binlog_pos: s.node.position().to_string(),
        connections: s.replication.status(),
    })
}

/// `POST /v1/replication/{name}/change-master`: CHANGE MASTER (creates the connection when new).
async fn change_master(
    State(s): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<ChangeMaster>, JsonRejection>,
) -> Result<Json<bodies::MasterChanged>, ApiError> {
    let req = json_body(body)?;
    s.replication.change_master(&name, req).await?;
    Ok(Json(bodies::MasterChanged { connection: name, gtid_slave_pos: s.node.slave_position().to_string() }))
}

#[derive(Deserialize, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct StartBody {
    until: Option<String>,
    /// Start the IO side only; the SQL side waits for `resume-sql` (benchmarks time the apply alone this way).
    #[serde(default)]
    sql_paused: bool,
}

/// `POST /v1/replication/{name}/start`: START [UNTIL position].
async fn start_connection(
    State(s): State<AppState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<bodies::Started>, ApiError> {
    let body: StartBody = optional_json_body(&body)?;
    if let Some(why) = s.cloning.refusal("starting replication") {
        return Err(ApiError::new(axum::http::StatusCode::CONFLICT, "clone_incomplete", why));
    }
    let until = match body.until {
        Some(text) => Some(text.parse().map_err(|e: ferry_core::GtidParseError| ApiError::bad_request(e.to_string()))?),
        None => None,
    };
    s.replication.start(&name, until, body.sql_paused)?;
    Ok(Json(bodies::Started { connection: name, running: true, sql_paused: body.sql_paused }))
}

/// `POST /v1/replication/{name}/resume-sql`: lets a connection started with `sql_paused` apply.
async fn resume_sql(State(s): State<AppState>, Path(name): Path<String>) -> Result<Json<bodies::SqlResumed>, ApiError> {
    s.replication.resume_sql(&name)?;
    Ok(Json(bodies::SqlResumed { connection: name, sql_paused: false }))
}

/// `POST /v1/replication/{name}/stop`: STOP.
async fn stop_connection(
    State(s): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<bodies::Stopped>, ApiError> {
    s.replication.stop(&name).await?;
    Ok(Json(bodies::Stopped { connection: name, running: false }))
}

/// `DELETE /v1/replication/{name}`: stops the connection and removes it with its relay log.
async fn remove_connection(
    State(s): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<bodies::Removed>, ApiError> {
    s.replication.remove(&name).await?;
    Ok(Json(bodies::Removed { connection: name, removed: true }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SkipCounterBody {
    /// Transactions the connection's next start passes over (0 clears the counter).
    count: u32,
}

/// `POST /v1/replication/{name}/skip-counter`: SET GLOBAL sql_slave_skip_counter for a stopped connection.
async fn set_skip_counter(
    State(s): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<SkipCounterBody>, JsonRejection>,
) -> Result<Json<bodies::SkipCounterSet>, ApiError> {
    let body = json_body(body)?;
    s.replication.set_skip_counter(&name, u64::from(body.count))?;
    Ok(Json(bodies::SkipCounterSet { connection: name, skip_counter: body.count }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ParallelBody {
    /// `serial`, `conservative` or `optimistic`.
    mode: ParallelMode,
    /// Transactions applied at once (1 to 256), and at most per domain (1 to `workers`).
    workers: usize,
    domain_workers_max: usize,
}

/// `POST /v1/replication/{name}/parallel`: a connection's parallel apply, changed while it runs (its SQL side
/// takes it between two batches, its IO side goes on) or while stopped; the other settings are kept.
async fn set_parallel(
    State(s): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<ParallelBody>, JsonRejection>,
) -> Result<Json<bodies::ParallelSet>, ApiError> {
    let body = json_body(body)?;
    let parallel =
        ParallelConfig { mode: body.mode, workers: body.workers, domain_workers_max: body.domain_workers_max };
    let running = s.replication.set_parallel(&name, parallel)?;
    Ok(Json(bodies::ParallelSet { connection: name, parallel, running }))
}

#[derive(Deserialize, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ResetBody {
    /// RESET SLAVE ALL: remove the connection's settings too.
    #[serde(default)]
    all: bool,
}

/// `POST /v1/replication/{name}/reset`: RESET SLAVE ['name'] [ALL] for a stopped connection.
async fn reset(
    State(s): State<AppState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<bodies::ConnectionReset>, ApiError> {
    let all = optional_json_body::<ResetBody>(&body)?.all;
    s.replication.reset(&name, all)?;
    Ok(Json(bodies::ConnectionReset {
        connection: name,
        reset: true,
        removed: all,
        gtid_slave_pos: s.node.slave_position().to_string(),
    }))
}

//! The admin HTTP API (docs/node-api.md), versioned under `/v1`, plus Prometheus `/metrics`: the routes and
//! their handlers.
//!
//! Every route but the liveness check `GET /v1/health` goes through one authentication layer (`bearer`): it
//! needs `Authorization: Bearer <token>` matching the `--admin-token-file`, reads included; a missing or wrong
//! token gets 401 and reaches no handler. Connections are bounded by `connections`. Errors are JSON:
//! `{"error": {"code": "...", "message": "..."}}`.
//!
//! - `bearer`: the authentication layer.
//! - `bodies`: each route's answer, typed; `schema`: the JSON Schemas of every request and answer body, as one
//!   document (`admin-api.schema.json`).
//! - `binlog`: RESET MASTER, DELETE_DOMAIN_ID and SHOW BINLOG EVENTS IN a file.
//! - `checksums`: table checksums, one computation at a time.
//! - `clone`: rebuilding this node from a donor's snapshot (start, progress, throttle and pause, cancel).
//! - `fence`: fencing tokens (`X-Ferry-Fence`): a state-changing request carrying a token lower than one this node
//!   has seen in its scope is refused 409 `stale_fence` (after authentication, before its handler).
//! - `connections`: the accept loop (connection caps, before and after authentication; idle and authentication
//!   timeouts).
//! - `replication`: every `/v1/replication` route.
//! - `rewind`: rewind to a GTID position (a DBA command, guarded) and the archives of what it cut.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use ferry_core::admission::Undrained;
use ferry_core::node::{Node, NodeError, PurgeError};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::sync::watch;

mod bearer;
mod binlog;
mod bodies;
mod checksums;
mod clone;
mod connections;
pub mod fence;
mod replication;
mod rewind;
#[cfg(test)]
mod schema;

pub use checksums::ChecksumGate;
pub use connections::ConnectionLimits;

use crate::auth::AdminToken;
use crate::consumers::ConsumerRegistry;
use crate::metrics::Metrics;
use crate::replicas::ReplicaRegistry;
use crate::replication::Replication;

/// Most events one page of `/v1/binlog/events` returns.
const EVENTS_PAGE_MAX: usize = 1000;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub node: Arc<Node>,
    pub token: Option<AdminToken>,
    pub metrics: Arc<Metrics>,
    pub replicas: Arc<ReplicaRegistry>,
    /// The change consumers streaming from this node, and their bounds.
    pub consumers: Arc<ConsumerRegistry>,
    pub consumer_limits: crate::subscribe::ConsumerLimits,
    pub replication: Arc<Replication>,
    pub advertised: crate::Advertised,
    pub expiry: Arc<crate::expiry::Expiry>,
    /// One checksum computation at a time.
    pub checksums: ChecksumGate,
    /// This node's clone (as a recipient).
    pub cloning: Arc<crate::clone::Cloning>,
    /// The highest fencing token seen per scope (`fence`).
    pub fences: Arc<fence::Fences>,
}

impl AppState {
    /// What streams from or into the node (for the commands that need it quiesced).
    fn streams(&self) -> crate::quiesced::Streams {
        crate::quiesced::Streams {
            replication: self.replication.clone(),
            replicas: self.replicas.clone(),
            consumers: self.consumers.clone(),
        }
    }
}

/// Serves the admin API on `listener` until `stop`, within `limits`.
pub async fn serve(listener: TcpListener, state: AppState, limits: ConnectionLimits, stop: watch::Receiver<bool>) {
    let token = state.token.clone();
    connections::serve(listener, router(state), token, limits, stop).await;
}

fn router(state: AppState) -> Router {
    let authenticated = Router::new()
        .route("/v1/status", get(status))
        .route("/v1/read-only", post(set_read_only))
        .route("/v1/binlog/flush", post(flush_logs))
        .route("/v1/binlog/purge", post(purge_logs))
        .route("/v1/binlog/reset", post(binlog::reset_master))
        .route("/v1/binlog/events", get(events))
        .route("/v1/binlog/files/{file}/events", get(binlog::events_in_file))
        .route("/v1/checksums", get(checksums::checksums))
        .route("/v1/clone", post(clone::start).get(clone::view).patch(clone::change).delete(clone::cancel))
        .route("/v1/rewind", post(rewind::rewind))
        .route("/v1/rewind/archives", get(rewind::archives))
        .route("/v1/rewind/archives/{name}", get(rewind::archive))
        .route("/v1/replicas", get(replicas))
        .route("/v1/consumers", get(consumers))
        .merge(replication::routes())
        .route("/v1/wait-for-position", post(wait_for_position))
        .route("/v1/fence", post(fence::raise))
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(state.fences.clone(), fence::require_fresh))
        .route_layer(middleware::from_fn_with_state(state.token.clone(), bearer::require_token));
    Router::new()
        .route("/v1/health", get(health))
        .merge(authenticated)
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint; see docs/node-api.md")
        })
        .with_state(state)
}

#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into() }
    }

    fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    fn internal(message: impl ToString) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body =
            Json(bodies::ErrorBody { error: bodies::ErrorDetail { code: self.code.into(), message: self.message } });
        if self.status == StatusCode::UNAUTHORIZED {
            return (self.status, [(header::WWW_AUTHENTICATE, "Bearer")], body).into_response();
        }
        (self.status, body).into_response()
    }
}

fn json_body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    body.map(|Json(v)| v).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {}", e.body_text())))
}

/// A body that may be left out: an empty one (whatever its content type — `curl -X POST`, a client that sends a
/// form type with no body) is the default; anything else must be a JSON object of the right shape, else a JSON 400.
fn optional_json_body<T: Default + serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(ApiError::internal)
}

/// `GET /v1/health`: liveness, the one route without a token; it says nothing about the node.
async fn health() -> Json<bodies::Health> {
    Json(bodies::Health { ok: true })
}

async fn status(State(s): State<AppState>) -> Result<Json<bodies::Status>, ApiError> {
    let node = s.node.clone();
    let status = blocking(move || node.status()).await?;
    Ok(Json(bodies::Status {
        node: status,
        replication: s.replication.status(),
        replicas: s.replicas.list(),
        consumers: consumers_body(&s).consumers,
        binlog_expiry: s.expiry.status(),
        listen: s.advertised.listen.clone(),
        admin: s.advertised.admin.clone(),
        clone_incomplete: s.cloning.incomplete(),
        api_version: 1,
    }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadOnlyBody {
    read_only: bool,
    /// With `read_only: true`: answer only once the client commits admitted before read-only went on have
    /// their answers (at most this long), with the binlog position at which client writes stopped.
    wait_for_in_flight_ms: Option<u64>,
}

async fn set_read_only(
    State(s): State<AppState>,
    body: Result<Json<ReadOnlyBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = json_body(body)?;
    if !body.read_only {
        if let Some(why) = s.cloning.refusal("leaving read-only") {
            return Err(ApiError::new(StatusCode::CONFLICT, "clone_incomplete", why));
        }
    }
    let max = s.node.config().limits.wait_ms_max;
    match body.wait_for_in_flight_ms {
        Some(_) if !body.read_only => {
            return Err(ApiError::bad_request("wait_for_in_flight_ms goes with read_only true only"));
        }
        Some(ms) if ms > max => {
            return Err(ApiError::bad_request(format!("wait_for_in_flight_ms {ms} exceeds the {max} ms limit")));
        }
        _ => {}
    }
    let in_flight = {
        let node = s.node.clone();
        let on = body.read_only;
        blocking(move || node.set_read_only_durably(on)).await?.map_err(|e| {
            ApiError::internal(if on {
                format!(
                    "read-only is on, but recording it in the data directory failed, so a restart may not keep it: {e}"
                )
            } else {
                format!("the node stays read-only: recording writable in the data directory failed: {e}")
            })
        })?
    };
    tracing::info!(read_only = body.read_only, in_flight, "read-only changed through the admin API (recorded)");
    let Some(wait_ms) = body.wait_for_in_flight_ms else {
        let answer =
            bodies::ReadOnly { read_only: s.node.is_read_only(), commits_in_flight: s.node.commits_in_flight() };
        return Ok(Json(answer).into_response());
    };
    let started = std::time::Instant::now();
    match s.node.commits_drained(std::time::Duration::from_millis(wait_ms)).await {
        Ok(()) => {
            let node = s.node.clone();
            let position = blocking(move || node.binlog_position()).await?;
            let waited_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
            tracing::info!(%position, in_flight, waited_ms, "read-only: every commit in flight has its answer");
            Ok(Json(bodies::WritesStopped {
                read_only: true,
                commits_in_flight: 0,
                in_flight_at_read_only: in_flight,
                gtid_binlog_pos: position.to_string(),
                waited_ms,
            })
            .into_response())
        }
        Err(e @ Undrained::TimedOut { .. }) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "commits_in_flight",
            format!("{e}; the node stays read-only: call again to wait longer, or turn read-only off"),
        )),
        Err(e @ Undrained::Writable) => Err(ApiError::new(StatusCode::CONFLICT, "read_only_off", e.to_string())),
    }
}

async fn flush_logs(State(s): State<AppState>, body: Bytes) -> Result<Json<bodies::Flushed>, ApiError> {
    let body: binlog::FlushBody = optional_json_body(&body)?;
    if !body.delete_domain_ids.is_empty() {
        return binlog::flush_deleting_domains(s, body.delete_domain_ids).await;
    }
    let file = blocking(move || s.node.flush_logs()).await?.map_err(ApiError::internal)?;
    Ok(Json(bodies::Flushed { file, deleted_domain_ids: None, not_present: None, gtid_binlog_state: None }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PurgeBody {
    before: String,
}

async fn purge_logs(
    State(s): State<AppState>,
    body: Result<Json<PurgeBody>, JsonRejection>,
) -> Result<Json<bodies::Purged>, ApiError> {
    let body = json_body(body)?;
    let readers = s.replicas.readers();
    let purged = blocking(move || s.node.purge_logs(&body.before, &readers)).await?;
    match purged {
        Ok(purged) => Ok(Json(bodies::Purged { purged })),
        Err(e @ PurgeError::InUse { .. }) => {
            Err(ApiError::new(StatusCode::CONFLICT, "in_use_by_replica", e.to_string()))
        }
        Err(PurgeError::Node(NodeError::Binlog(ferry_core::binlog::BinlogError::Invalid(msg)))) => {
            Err(ApiError::bad_request(msg))
        }
        Err(PurgeError::Node(e)) => Err(ApiError::internal(e)),
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventsQuery {
    limit: Option<usize>,
    domain: Option<u32>,
    before: Option<u64>,
}

async fn events(
    State(s): State<AppState>,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Json<bodies::EventsPage>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > EVENTS_PAGE_MAX {
        return Err(ApiError::bad_request(format!("limit must be between 1 and {EVENTS_PAGE_MAX}")));
    }
    let events = s.node.recent_events(q.domain, limit, q.before);
    let next_before = (events.len() == limit).then(|| events.last().map(|e| e.seq)).flatten();
    Ok(Json(bodies::EventsPage { events, next_before }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitBody {
    position: String,
    timeout_ms: u64,
}

async fn wait_for_position(
    State(s): State<AppState>,
    body: Result<Json<WaitBody>, JsonRejection>,
) -> Result<Json<bodies::Waited>, ApiError> {
    let body = json_body(body)?;
    let target: ferry_core::GtidPosition =
        body.position.parse().map_err(|e: ferry_core::GtidParseError| ApiError::bad_request(e.to_string()))?;
    let max = s.node.config().limits.wait_ms_max;
    if body.timeout_ms > max {
        return Err(ApiError::bad_request(format!("timeout_ms {} exceeds the {max} ms limit", body.timeout_ms)));
    }
    let waited = s.node.wait_for_position_async(&target, std::time::Duration::from_millis(body.timeout_ms)).await;
    let (reached, position) = match waited {
        Ok(p) => (true, p),
        Err(p) => (false, p),
    };
    Ok(Json(bodies::Waited { reached, position: position.to_string() }))
}

async fn replicas(State(s): State<AppState>) -> Json<bodies::Replicas> {
    Json(bodies::Replicas { replicas: s.replicas.list() })
}

/// `GET /v1/consumers`: the change consumers streaming now (each with its position and lag), the last ones cut
/// off, and the bounds.
async fn consumers(State(s): State<AppState>) -> Json<bodies::Consumers> {
    Json(consumers_body(&s))
}

fn consumers_body(s: &AppState) -> bodies::Consumers {
    let master = s.node.binlog_position();
    bodies::Consumers {
        consumers: s.consumers.list(&master, ferry_core::binlog::writer::now_us()),
        cut_off: s.consumers.cut_off(),
        cut_off_total: s.consumers.cut_off_total(),
        consumers_max: s.consumer_limits.consumers_max,
        stall_bytes_max: s.consumer_limits.stall_bytes_max,
        buffer_bytes_max: s.node.config().limits.dump_buffer_bytes_max,
    }
}

async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    let (connections, expiry) = (s.replication.status(), s.expiry.status());
    let text = s.metrics.render(&s.node, &connections, &s.replicas, &s.consumers, &expiry, &s.cloning);
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text)
}

//! The DBA's replication controls of the admin API: the skip counter (sql_slave_skip_counter) and RESET SLAVE.

use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::{json_body, optional_json_body, ApiError, AppState};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SkipCounterBody {
    /// Transactions the connection's next start passes over (0 clears the counter).
    count: u32,
}

/// `POST /v1/replication/{name}/skip-counter`: SET GLOBAL sql_slave_skip_counter for a stopped connection.
pub(super) async fn set_skip_counter(
    State(s): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<SkipCounterBody>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let body = json_body(body)?;
    s.replication.set_skip_counter(&name, u64::from(body.count))?;
    Ok(Json(json!({"connection": name, "skip_counter": body.count})))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct ResetBody {
    /// RESET SLAVE ALL: remove the connection's settings too.
    #[serde(default)]
    all: bool,
}

/// `POST /v1/replication/{name}/reset`: RESET SLAVE ['name'] [ALL] for a stopped connection.
pub(super) async fn reset(
    State(s): State<AppState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    let all = optional_json_body::<ResetBody>(&body)?.all;
    s.replication.reset(&name, all)?;
    Ok(Json(json!({
        "connection": name,
        "reset": true,
        "removed": all,
        "gtid_slave_pos": s.node.slave_position().to_string(),
    })))
}

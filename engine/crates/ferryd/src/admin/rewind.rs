//! The admin API's rewind: `POST /v1/rewind` takes a quiesced node back to a GTID position (a dry run lists what
//! it would cut), `GET /v1/rewind/archives` lists the archives of the transactions earlier rewinds cut, and
//! `GET /v1/rewind/archives/{name}` downloads one (a binlog file `ferry-binlog` reads).
//!
//! Refused here, before the node is asked: a running replication connection (it would apply on top of the
//! history being changed), connected replicas and change consumers (they have read, or are reading, the
//! transactions the rewind cuts: their history would change under them). The node itself refuses a writable
//! node, commits in flight, and every position it cannot go back to.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use ferry_core::binlog::rewind::{is_archive_name, ARCHIVE_DIR};
use ferry_core::gtid::GtidPosition;
use ferry_core::node::{RewindError, RewindOutcome};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, bodies, json_body, ApiError, AppState};

/// Largest archive the download answers in one body; a larger one is read from the data directory.
pub(super) const ARCHIVE_DOWNLOAD_BYTES_MAX: u64 = 256 << 20;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RewindBody {
    /// The position to go back to: per domain, the last GTID to keep (`0-1-100,1-2-50`); a domain left out is cut
    /// whole.
    to: String,
    /// Only list what would be cut (and every refusal); change nothing.
    #[serde(default)]
    dry_run: bool,
}

impl From<RewindError> for ApiError {
    fn from(e: RewindError) -> Self {
        match e {
            RewindError::Refused(r) => ApiError::new(StatusCode::CONFLICT, "cannot_rewind", r.to_string()),
            RewindError::NotQuiesced(why) => ApiError::new(StatusCode::CONFLICT, "not_quiesced", why),
            RewindError::Node(e) => ApiError::internal(e),
        }
    }
}

/// `POST /v1/rewind {"to": "0-1-100,1-2-50", "dry_run": false}`.
pub(super) async fn rewind(
    State(s): State<AppState>,
    body: Result<Json<RewindBody>, JsonRejection>,
) -> Result<Json<RewindOutcome>, ApiError> {
    let body = json_body(body)?;
    let to: GtidPosition =
        body.to.parse().map_err(|e| ApiError::bad_request(format!("to is not a GTID position: {e}")))?;
    if let Some((code, why)) = busy(&s) {
        return Err(ApiError::new(StatusCode::CONFLICT, code, why));
    }
    let node = s.node.clone();
    let quiesced = move || busy(&s).map(|(_, why)| why);
    let outcome = blocking(move || node.rewind(&to, body.dry_run, &quiesced)).await??;
    Ok(Json(outcome))
}

/// What streams from or into this node that a rewind would change history under (see `crate::quiesced`).
fn busy(s: &AppState) -> Option<(&'static str, String)> {
    s.streams().busy("a rewind")
}

/// `GET /v1/rewind/archives`: the archives earlier rewinds left, oldest first.
pub(super) async fn archives(State(s): State<AppState>) -> Json<bodies::RewindArchives> {
    Json(bodies::RewindArchives { archives: s.node.rewind_archives() })
}

/// `GET /v1/rewind/archives/{name}`: one archive's bytes (`application/octet-stream`).
pub(super) async fn archive(State(s): State<AppState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    if !is_archive_name(&name) {
        return Err(ApiError::bad_request(format!(
            "{name:?} is not a rewind archive's name (see GET /v1/rewind/archives)"
        )));
    }
    let path = s.node.config().data_dir.join(ARCHIVE_DIR).join(&name);
    let fs = s.node.config().fs.clone();
    let bytes = blocking(move || -> Result<Vec<u8>, ApiError> {
        let len = match fs.file_len(&path) {
            Ok(len) => len,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ApiError::new(StatusCode::NOT_FOUND, "no_such_archive", format!("no archive {name:?}")))
            }
            Err(e) => return Err(ApiError::internal(e)),
        };
        if len > ARCHIVE_DOWNLOAD_BYTES_MAX {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "archive_too_large",
                format!(
                    "archive {name:?} is {len} bytes, over the {ARCHIVE_DOWNLOAD_BYTES_MAX}-byte download limit: \
                     copy {} from the node's host",
                    path.display()
                ),
            ));
        }
        fs.read(&path).map_err(ApiError::internal)
    })
    .await??;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
}

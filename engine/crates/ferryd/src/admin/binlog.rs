//! The DBA's binlog controls of the admin API: SHOW BINLOG EVENTS by file and offset, FLUSH BINARY LOGS
//! DELETE_DOMAIN_ID, RESET MASTER.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use ferry_core::binlog::listing::{ListingError, ListingRequest};
use ferry_core::node::DeleteDomainError;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, bodies, json_body, ApiError, AppState, EVENTS_PAGE_MAX};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FileEventsQuery {
    /// Byte offset of the first event (`FROM pos`); the file's first event when absent.
    from: Option<u64>,
    /// Events passed over first (`LIMIT skip, limit`); at most [`EVENTS_SKIP_MAX`].
    skip: Option<usize>,
    limit: Option<usize>,
}

impl From<ListingError> for ApiError {
    fn from(e: ListingError) -> Self {
        match e {
            ListingError::NoSuchFile { .. } => ApiError::new(StatusCode::NOT_FOUND, "no_such_binlog", e.to_string()),
            ListingError::NotABoundary { .. } | ListingError::PastEnd { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "bad_offset", e.to_string())
            }
            ListingError::Binlog(e) => ApiError::internal(e),
        }
    }
}

/// Most events `skip` passes over. A listing reads its file one event at a time and drops what it does not
/// return, so whatever `skip` says it holds one event in memory and reads at most the file; the bound refuses
/// nonsensical offsets early. Deeper pages are reached with `from` (the previous page's `next_from`).
pub(super) const EVENTS_SKIP_MAX: usize = 1_000_000;

/// `GET /v1/binlog/files/{file}/events?from=&skip=&limit=`: SHOW BINLOG EVENTS IN 'file' FROM pos LIMIT skip, n.
pub(super) async fn events_in_file(
    State(s): State<AppState>,
    Path(file): Path<String>,
    query: Result<Query<FileEventsQuery>, QueryRejection>,
) -> Result<Json<bodies::FileEventsPage>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > EVENTS_PAGE_MAX {
        return Err(ApiError::bad_request(format!("limit must be between 1 and {EVENTS_PAGE_MAX}")));
    }
    let skip = q.skip.unwrap_or(0);
    if skip > EVENTS_SKIP_MAX {
        return Err(ApiError::bad_request(format!(
            "skip must be at most {EVENTS_SKIP_MAX}; page further with from=<next_from>"
        )));
    }
    let request = ListingRequest { from: q.from, skip, limit, end: None };
    let name = file.clone();
    let rows = blocking(move || s.node.binlog_events_in(&name, request)).await??;
    let next_from = (rows.len() == limit).then(|| rows.last().map(|r| r.end_log_pos)).flatten();
    Ok(Json(bodies::FileEventsPage { file, events: rows, next_from }))
}

/// Most domains one DELETE_DOMAIN_ID call may name.
const DELETE_DOMAIN_IDS_MAX: usize = 1024;

#[derive(Deserialize, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FlushBody {
    /// FLUSH BINARY LOGS DELETE_DOMAIN_ID=(...): domains the new file's GTID list leaves out.
    #[serde(default)]
    pub(super) delete_domain_ids: Vec<u32>,
}

/// `POST /v1/binlog/flush {"delete_domain_ids": [...]}`.
pub(super) async fn flush_deleting_domains(s: AppState, domains: Vec<u32>) -> Result<Json<bodies::Flushed>, ApiError> {
    if domains.len() > DELETE_DOMAIN_IDS_MAX {
        return Err(ApiError::bad_request(format!("delete_domain_ids lists at most {DELETE_DOMAIN_IDS_MAX} domains")));
    }
    let node = s.node.clone();
    match blocking(move || node.flush_logs_deleting_domains(&domains)).await? {
        Ok((file, deletion)) => Ok(Json(bodies::Flushed {
            file,
            deleted_domain_ids: Some(deletion.deleted),
            not_present: Some(deletion.not_present),
            gtid_binlog_state: Some(s.node.binlog_state().to_string()),
        })),
        Err(DeleteDomainError::InBinlog(e)) => {
            Err(ApiError::new(StatusCode::CONFLICT, "domain_in_binlog", e.to_string()))
        }
        Err(DeleteDomainError::Node(e)) => Err(ApiError::internal(e)),
    }
}

/// Highest first file number RESET MASTER TO accepts (MariaDB's limit).
const RESET_TO_MAX: u64 = 2_147_483_647;

#[derive(Deserialize, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ResetBody {
    /// RESET MASTER TO n: the new first file's number (1 when absent).
    to: Option<u64>,
    /// Go ahead although replicas are connected or the node is writable.
    #[serde(default)]
    force: bool,
    /// Start the seq_no counters again from gtid_slave_pos (MariaDB's behaviour): GTIDs handed out before may
    /// be handed out again.
    #[serde(default)]
    reuse_seq_nos: bool,
}

/// `POST /v1/binlog/reset`: RESET MASTER [TO n], guarded.
pub(super) async fn reset_master(
    State(s): State<AppState>,
    body: Result<Json<ResetBody>, JsonRejection>,
) -> Result<Json<bodies::BinlogReset>, ApiError> {
    let body = json_body(body)?;
    let first_seq = body.to.unwrap_or(1);
    if first_seq == 0 || first_seq > RESET_TO_MAX {
        return Err(ApiError::bad_request(format!("to must be between 1 and {RESET_TO_MAX}")));
    }
    if !body.force {
        let replicas = s.replicas.list();
        if let Some(r) = replicas.first() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "replicas_connected",
                format!(
                    "{} replica(s) are connected (server_id {} at {} among them): RESET MASTER would delete the \
                     binlog they stream from; stop them first, or pass force",
                    replicas.len(),
                    r.server_id,
                    r.address
                ),
            ));
        }
        if !s.node.is_read_only() || s.node.commits_in_flight() > 0 {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "writable",
                "the node takes client writes: make it read-only (and let its commits in flight finish) before \
                 RESET MASTER, or pass force",
            ));
        }
    }
    let node = s.node.clone();
    let removed =
        blocking(move || node.reset_master(first_seq, body.reuse_seq_nos)).await?.map_err(ApiError::internal)?;
    Ok(Json(bodies::BinlogReset {
        deleted: removed,
        file: ferry_core::binlog::file_name(first_seq),
        gtid_binlog_state: s.node.binlog_state().to_string(),
        gtid_slave_pos: s.node.slave_position().to_string(),
        reuse_seq_nos: body.reuse_seq_nos,
    }))
}

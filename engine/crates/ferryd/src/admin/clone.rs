//! The admin API's clone (the recipient's side): `POST /v1/clone` starts (or resumes) rebuilding this quiesced
//! node from a donor's snapshot, `GET /v1/clone` shows its progress, `PATCH /v1/clone` changes its throttle and
//! pause while it copies, `DELETE /v1/clone` cancels it. Every answer is the clone's view (`CloneView`).

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use super::{json_body, ApiError, AppState};
use crate::clone::{CloneView, Refusal, Start, MB};

/// Largest throttle accepted, MB/s.
const THROTTLE_MB_S_MAX: f64 = 1e6;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CloneBody {
    /// The donor's protocol address (`host:port`).
    donor: String,
    /// At most this many MB/s (10^6 bytes) received; null or left out: no limit.
    #[serde(default)]
    throttle_mb_s: Option<f64>,
    /// Continue this node's unfinished clone of the same donor (from where it stopped, when the donor still holds
    /// its snapshot; else from the beginning).
    #[serde(default)]
    resume: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ClonePatch {
    /// The new throttle in MB/s; null: none; left out: unchanged.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<f64>")]
    throttle_mb_s: Option<Option<f64>>,
    /// Pause (true) or go on (false); left out: unchanged.
    #[serde(default)]
    paused: Option<bool>,
}

/// A field that is present (even as null) is `Some`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<f64>>, D::Error> {
    Option::<f64>::deserialize(d).map(Some)
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        let status = if r.conflict {
            StatusCode::CONFLICT
        } else if r.code == "internal" {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::BAD_REQUEST
        };
        ApiError::new(status, r.code, r.message)
    }
}

fn rate(mb_s: Option<f64>) -> Result<Option<u64>, ApiError> {
    match mb_s {
        None => Ok(None),
        Some(v) if v.is_finite() && v > 0.0 && v <= THROTTLE_MB_S_MAX => Ok(Some(((v * MB) as u64).max(1))),
        Some(v) => Err(ApiError::bad_request(format!(
            "throttle_mb_s {v} is not a rate: give a number above 0 and at most {THROTTLE_MB_S_MAX}, or null for none"
        ))),
    }
}

/// `POST /v1/clone {"donor": "host:port", "throttle_mb_s": 50, "resume": false}`.
pub(super) async fn start(
    State(s): State<AppState>,
    body: Result<Json<CloneBody>, JsonRejection>,
) -> Result<Json<CloneView>, ApiError> {
    let body = json_body(body)?;
    let rate = rate(body.throttle_mb_s)?;
    Ok(Json(s.cloning.start(Start { donor: body.donor, rate, resume: body.resume })?))
}

/// `GET /v1/clone`.
pub(super) async fn view(State(s): State<AppState>) -> Json<CloneView> {
    Json(s.cloning.view())
}

/// `PATCH /v1/clone {"throttle_mb_s": 10, "paused": true}`.
pub(super) async fn change(
    State(s): State<AppState>,
    body: Result<Json<ClonePatch>, JsonRejection>,
) -> Result<Json<CloneView>, ApiError> {
    let body = json_body(body)?;
    let rate = body.throttle_mb_s.map(rate).transpose()?;
    if rate.is_none() && body.paused.is_none() {
        return Err(ApiError::bad_request("give throttle_mb_s or paused (or both)"));
    }
    Ok(Json(s.cloning.change(rate, body.paused)?))
}

/// `DELETE /v1/clone`: answered once the clone has stopped.
pub(super) async fn cancel(State(s): State<AppState>) -> Result<Json<CloneView>, ApiError> {
    Ok(Json(s.cloning.cancel().await?))
}

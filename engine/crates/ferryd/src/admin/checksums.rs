//! `GET /v1/checksums`: per table, the row count and an order-independent checksum at one GTID position. A
//! computation reads every row of the store, so one runs at a time: a request while one runs is answered
//! 429 `busy` at once. The computation itself is off the commit path (`Node::checksums`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{blocking, bodies, ApiError, AppState};

/// The right to compute checksums: one holder at a time.
#[derive(Clone)]
pub struct ChecksumGate(Arc<Semaphore>);

impl Default for ChecksumGate {
    fn default() -> Self {
        ChecksumGate(Arc::new(Semaphore::new(1)))
    }
}

impl ChecksumGate {
    /// The right to compute, held until the computation ends (also when its client has gone away meanwhile), or
    /// 429 `busy` when a computation is running.
    fn enter(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.0.clone().try_acquire_owned().map_err(|_| {
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "busy",
                "a checksum computation is already running on this node; ask again once it has finished",
            )
        })
    }
}

pub(super) async fn checksums(State(s): State<AppState>) -> Result<Json<bodies::Checksums>, ApiError> {
    let running = s.checksums.enter()?;
    let node = s.node.clone();
    let computed = blocking(move || {
        let _running = running;
        node.checksums()
    });
    let (position, sums) = computed.await?.map_err(ApiError::internal)?;
    Ok(Json(bodies::Checksums { position: position.to_string(), tables: sums }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_computation_while_one_runs_is_answered_busy_and_the_gate_reopens_after() {
        let gate = ChecksumGate::default();
        let running = gate.enter().expect("the first computation starts");
        let busy = gate.enter().expect_err("a second one is refused");
        assert_eq!((busy.status, busy.code), (StatusCode::TOO_MANY_REQUESTS, "busy"));
        assert!(busy.message.contains("already running"), "{}", busy.message);
        assert!(gate.clone().enter().is_err(), "clones share the gate");
        drop(running);
        assert!(gate.enter().is_ok(), "once it has finished, the next one starts");
    }
}

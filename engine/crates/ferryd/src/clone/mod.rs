//! Clone: a node rebuilt from a donor's consistent snapshot over the node protocol (docs/architecture.md
//! "Clone").
//!
//! - `donor`: the snapshots a donor holds and the stream of one (`Request::Clone`).
//! - `recipient`: the task that pulls a snapshot into a staging store, verifies it, and installs it.
//! - `throttle`: the token bucket on the bytes received.
//! - `record`: the durable record of an unfinished clone (the node's `clone_incomplete` mark).
//!
//! This module holds [`Cloning`]: the recipient's one clone (at most one at a time), its progress as
//! `GET /v1/clone` shows it, and its controls (throttle, pause, cancel).

pub mod donor;
mod recipient;
pub mod record;
pub mod throttle;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use ferry_core::node::Node;
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::watch;

use crate::auth::AdminToken;
use crate::quiesced::Streams;
use record::{CloneRecord, Unfinished};

/// The staging store's file name, in the data directory.
pub const STAGING_FILE: &str = "clone-staging.redb";
/// Bytes per MB (throttles are in MB/s).
pub const MB: f64 = 1e6;
/// The window `rate_bytes_s` is measured over.
const RATE_WINDOW_S: f64 = 3.0;

/// Where the node's clone stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CloneState {
    Idle,
    Copying,
    Done,
    Failed,
    Cancelled,
}

/// `GET /v1/clone` (and the answer of `POST`, `PATCH` and `DELETE`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CloneView {
    pub state: CloneState,
    /// The clone's id (the donor holds its snapshot under it); None when idle.
    pub clone_id: Option<String>,
    /// The donor's protocol address; None when idle.
    pub donor: Option<String>,
    /// Bytes of the snapshot received and verified (resumed bytes included).
    pub bytes_done: u64,
    /// The snapshot's size, once the donor said it.
    pub bytes_total: Option<u64>,
    /// Over the last few seconds.
    pub rate_bytes_s: f64,
    /// Seconds left at that rate (None: not copying, or no rate yet).
    pub eta_s: Option<f64>,
    /// The throttle in force, MB/s (None: none).
    pub throttle_mb_s: Option<f64>,
    /// True once the copy has stopped taking bytes because it was paused.
    pub paused: bool,
    /// The GTID position of the donor's snapshot, once known.
    pub position: Option<String>,
    /// Bytes a resume did not fetch again.
    pub resumed_bytes: u64,
    /// Why it failed.
    pub error: Option<String>,
}

impl CloneView {
    fn idle() -> Self {
        CloneView {
            state: CloneState::Idle,
            clone_id: None,
            donor: None,
            bytes_done: 0,
            bytes_total: None,
            rate_bytes_s: 0.0,
            eta_s: None,
            throttle_mb_s: None,
            paused: false,
            position: None,
            resumed_bytes: 0,
            error: None,
        }
    }
}

/// What the operator changes while a clone runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Control {
    /// Bytes per second; None: no limit.
    pub rate: Option<u64>,
    pub pause: bool,
    pub cancel: bool,
}

/// Why a clone cannot start, be changed or be cancelled (an admin API refusal: its code and message).
#[derive(Debug)]
pub struct Refusal {
    pub conflict: bool,
    pub code: &'static str,
    pub message: String,
}

impl Refusal {
    fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Refusal { conflict: true, code, message: message.into() }
    }

    fn bad(message: impl Into<String>) -> Self {
        Refusal { conflict: false, code: "bad_request", message: message.into() }
    }
}

/// A clone to start, as `POST /v1/clone` asks it.
pub struct Start {
    pub donor: String,
    pub rate: Option<u64>,
    pub resume: bool,
}

struct Inner {
    view: CloneView,
    /// The durable record while a clone is unfinished.
    record: Option<CloneRecord>,
    control: Option<watch::Sender<Control>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// The install has begun: it can no longer be cancelled.
    installing: bool,
    /// (when, bytes_done) over the rate window.
    samples: VecDeque<(Instant, u64)>,
}

/// The node's clone.
pub struct Cloning {
    node: Arc<Node>,
    token: Option<AdminToken>,
    streams: Streams,
    /// The protocol address this node advertises (a node does not clone itself).
    own_listen: String,
    /// Row data per chunk asked of the donor (`--clone-chunk-bytes`).
    chunk_bytes: u32,
    /// Row data staged between durable commits (`--clone-durable-bytes`).
    durable_bytes: u64,
    inner: Mutex<Inner>,
}

impl Cloning {
    /// The node's clone as its data directory records it: an unfinished one is shown failed (or cancelled), and
    /// the node stays marked.
    pub fn load(
        node: Arc<Node>,
        token: Option<AdminToken>,
        streams: Streams,
        own_listen: String,
        chunk_bytes: u32,
        durable_bytes: u64,
    ) -> anyhow::Result<Arc<Self>> {
        let record = record::read(&*node.config().fs, &node.config().data_dir).map_err(anyhow::Error::msg)?;
        let mut view = CloneView::idle();
        if let Some(r) = &record {
            view.clone_id = Some(r.clone_id.clone());
            view.donor = Some(r.donor.clone());
            view.position = r.position.clone();
            (view.state, view.error) = match r.state {
                Unfinished::Cancelled => (CloneState::Cancelled, None),
                Unfinished::Failed => (CloneState::Failed, r.error.clone()),
                Unfinished::Copying => (
                    CloneState::Failed,
                    Some("ferryd stopped while the clone was copying: resume it or start a new one".into()),
                ),
            };
        }
        Ok(Arc::new(Cloning {
            node,
            token,
            streams,
            own_listen,
            chunk_bytes,
            durable_bytes,
            inner: Mutex::new(Inner {
                view,
                record,
                control: None,
                task: None,
                installing: false,
                samples: VecDeque::new(),
            }),
        }))
    }

    /// The unfinished clone that marks this node (`clone_incomplete`), if any.
    pub fn incomplete(&self) -> Option<CloneRecord> {
        self.inner.lock().record.clone()
    }

    /// Why the node refuses `what` ("client writes", "leaving read-only", "starting replication") while a
    /// clone is unfinished; None when none is.
    pub fn refusal(&self, what: &str) -> Option<String> {
        let r = self.incomplete()?;
        let state = match r.state {
            Unfinished::Copying => "is copying",
            Unfinished::Failed => "failed",
            Unfinished::Cancelled => "was cancelled",
        };
        Some(format!(
            "this node's clone {} from {} {state}, so its data is incomplete: it refuses {what} until a clone \
             completes (resume it or start a new one: POST /v1/clone)",
            r.clone_id, r.donor
        ))
    }

    /// `GET /v1/clone`.
    pub fn view(&self) -> CloneView {
        let mut inner = self.inner.lock();
        let rate = rate_of(&mut inner.samples);
        let mut view = inner.view.clone();
        view.rate_bytes_s = if view.state == CloneState::Copying { rate } else { 0.0 };
        view.eta_s = match view.bytes_total {
            Some(total) if view.rate_bytes_s > 0.0 => {
                Some((total.saturating_sub(view.bytes_done) as f64 / view.rate_bytes_s * 10.0).round() / 10.0)
            }
            _ => None,
        };
        view
    }

    /// `POST /v1/clone`: starts (or resumes) a clone from `start.donor`, refused (changing nothing) unless the
    /// node is quiesced and no clone copies.
    pub fn start(self: &Arc<Self>, start: Start) -> Result<CloneView, Refusal> {
        if start.donor.trim().is_empty() || !start.donor.contains(':') {
            return Err(Refusal::bad(format!("donor {:?} is not a host:port protocol address", start.donor)));
        }
        if start.donor == self.own_listen {
            return Err(Refusal::bad(format!("donor {} is this node itself", start.donor)));
        }
        if self.token.is_none() {
            return Err(Refusal::conflict(
                "no_token",
                "a clone authenticates to its donor with the admin token: start ferryd with --admin-token-file",
            ));
        }
        let mut inner = self.inner.lock();
        if inner.view.state == CloneState::Copying {
            return Err(Refusal::conflict(
                "clone_running",
                format!(
                    "clone {} from {} is copying: cancel it first (DELETE /v1/clone)",
                    inner.view.clone_id.as_deref().unwrap_or("?"),
                    inner.view.donor.as_deref().unwrap_or("?")
                ),
            ));
        }
        if let Some(why) = self.node.storage_failure() {
            return Err(Refusal::conflict(
                "node_failed",
                format!("the node's storage failed ({why}): restart it first"),
            ));
        }
        if !self.node.is_read_only() {
            return Err(Refusal::conflict(
                "not_quiesced",
                "the node takes client writes: make it read-only before a clone (POST /v1/read-only)",
            ));
        }
        if let Some((code, why)) = self.streams.busy("a clone") {
            return Err(Refusal::conflict(code, why));
        }
        let clone_id = if start.resume {
            match &inner.record {
                Some(r) if r.donor == start.donor => r.clone_id.clone(),
                Some(r) => {
                    return Err(Refusal::conflict(
                        "other_donor",
                        format!(
                            "the unfinished clone {} is from {}, not {}: resume it from there, or start a new clone \
                             (resume false)",
                            r.clone_id, r.donor, start.donor
                        ),
                    ))
                }
                None => {
                    return Err(Refusal::conflict(
                        "nothing_to_resume",
                        "this node has no unfinished clone to resume: start a new one (resume false)",
                    ))
                }
            }
        } else {
            let now_us = ferry_core::binlog::writer::now_us();
            format!("c{}-{now_us}", self.node.config().server_id)
        };
        let record = CloneRecord {
            clone_id: clone_id.clone(),
            donor: start.donor.clone(),
            state: Unfinished::Copying,
            error: None,
            position: if start.resume { inner.record.as_ref().and_then(|r| r.position.clone()) } else { None },
        };
        let fs = self.node.config().fs.clone();
        let data_dir = self.node.config().data_dir.clone();
        record::write(&*fs, &data_dir, &record).map_err(|e| Refusal {
            conflict: false,
            code: "internal",
            message: format!("recording the clone: {e}"),
        })?;
        let control = Control { rate: start.rate, pause: false, cancel: false };
        let (tx, rx) = watch::channel(control);
        inner.record = Some(record);
        inner.view = CloneView {
            state: CloneState::Copying,
            clone_id: Some(clone_id.clone()),
            donor: Some(start.donor.clone()),
            throttle_mb_s: start.rate.map(|r| r as f64 / MB),
            ..CloneView::idle()
        };
        inner.samples.clear();
        inner.installing = false;
        inner.control = Some(tx);
        let job = recipient::Job {
            clone_id,
            donor: start.donor,
            resume: start.resume,
            token: self.token.clone().expect("checked above"),
            chunk_bytes: self.chunk_bytes,
            durable_bytes: self.durable_bytes,
        };
        let this = self.clone();
        inner.task = Some(tokio::spawn(async move {
            let outcome = recipient::run(&this, job, rx).await;
            this.finish(outcome);
        }));
        tracing::info!(clone_id = ?inner.view.clone_id, donor = ?inner.view.donor, resume = start.resume, "clone started");
        Ok(inner.view.clone())
    }

    /// `PATCH /v1/clone`: the throttle (`Some(None)`: none) and the pause, live.
    pub fn change(&self, rate: Option<Option<u64>>, pause: Option<bool>) -> Result<CloneView, Refusal> {
        {
            let mut inner = self.inner.lock();
            let Some(control) = inner.control.clone().filter(|_| inner.view.state == CloneState::Copying) else {
                return Err(Refusal::conflict("no_clone_copying", "no clone is copying: nothing to change"));
            };
            control.send_modify(|c| {
                if let Some(rate) = rate {
                    c.rate = rate;
                }
                if let Some(pause) = pause {
                    c.pause = pause;
                }
            });
            if let Some(rate) = rate {
                inner.view.throttle_mb_s = rate.map(|r| r as f64 / MB);
            }
            if pause == Some(false) {
                inner.view.paused = false;
            }
        }
        Ok(self.view())
    }

    /// `DELETE /v1/clone`: cancels the clone that copies, once its task has stopped; the node stays marked.
    pub async fn cancel(&self) -> Result<CloneView, Refusal> {
        let task = {
            let mut inner = self.inner.lock();
            if inner.view.state != CloneState::Copying {
                return Err(Refusal::conflict("no_clone_copying", "no clone is copying: nothing to cancel"));
            }
            if inner.installing {
                return Err(Refusal::conflict(
                    "installing",
                    "the clone is verified and being installed: it can no longer be cancelled",
                ));
            }
            if let Some(control) = &inner.control {
                control.send_modify(|c| c.cancel = true);
            }
            inner.task.take()
        };
        if let Some(task) = task {
            let _ = task.await;
        }
        Ok(self.view())
    }

    /// The task's progress: `bytes_done` of `bytes_total`.
    fn progressed(&self, bytes_done: u64) {
        let mut inner = self.inner.lock();
        inner.view.bytes_done = bytes_done;
        inner.samples.push_back((Instant::now(), bytes_done));
    }

    /// The donor's answer: the snapshot's position and size, and what a resume kept.
    fn begun(&self, position: &str, bytes_total: u64, resumed_bytes: u64) -> Result<(), String> {
        let mut inner = self.inner.lock();
        inner.view.position = Some(position.to_string());
        inner.view.bytes_total = Some(bytes_total);
        inner.view.resumed_bytes = resumed_bytes;
        inner.view.bytes_done = resumed_bytes;
        inner.samples.clear();
        inner.samples.push_back((Instant::now(), resumed_bytes));
        let record = inner.record.as_mut().expect("a copying clone is recorded");
        if record.position.as_deref() != Some(position) {
            record.position = Some(position.to_string());
            let record = record.clone();
            record::write(&*self.node.config().fs, &self.node.config().data_dir, &record)?;
        }
        Ok(())
    }

    fn set_paused(&self, paused: bool) {
        self.inner.lock().view.paused = paused;
    }

    /// The install begins (no cancel from here).
    fn installing(&self) -> bool {
        let mut inner = self.inner.lock();
        if inner.control.as_ref().is_some_and(|c| c.borrow().cancel) {
            return false;
        }
        inner.installing = true;
        true
    }

    /// The task ended: done (the record goes), failed or cancelled (the record says so).
    fn finish(&self, outcome: Result<(), recipient::Ended>) {
        let mut inner = self.inner.lock();
        inner.control = None;
        inner.view.paused = false;
        let fs = self.node.config().fs.clone();
        let data_dir = self.node.config().data_dir.clone();
        let (state, error) = match outcome {
            Ok(()) => (CloneState::Done, None),
            Err(recipient::Ended::Cancelled) => (CloneState::Cancelled, None),
            Err(recipient::Ended::Failed(why)) => (CloneState::Failed, Some(why)),
        };
        inner.view.state = state;
        inner.view.error = error.clone();
        match state {
            CloneState::Done => {
                if let Err(e) = record::clear(&*fs, &data_dir) {
                    tracing::error!("the clone is installed, but removing its record failed: {e}");
                }
                inner.record = None;
                tracing::info!(clone_id = ?inner.view.clone_id, position = ?inner.view.position, "clone done");
            }
            _ => {
                if let Some(record) = inner.record.as_mut() {
                    record.state =
                        if state == CloneState::Cancelled { Unfinished::Cancelled } else { Unfinished::Failed };
                    record.error = error.clone();
                    if let Err(e) = record::write(&*fs, &data_dir, record) {
                        tracing::error!("recording the clone's end failed: {e}");
                    }
                }
                tracing::warn!(clone_id = ?inner.view.clone_id, ?state, error = ?error, "clone ended unfinished");
            }
        }
    }
}

/// Bytes per second over the window (older samples dropped).
fn rate_of(samples: &mut VecDeque<(Instant, u64)>) -> f64 {
    let now = Instant::now();
    while samples.len() > 2
        && samples.front().is_some_and(|(t, _)| now.duration_since(*t).as_secs_f64() > RATE_WINDOW_S)
    {
        samples.pop_front();
    }
    match (samples.front(), samples.back()) {
        (Some((t0, b0)), Some((_, b1))) if b1 > b0 => {
            let secs = now.duration_since(*t0).as_secs_f64();
            if secs > 0.0 {
                (b1 - b0) as f64 / secs
            } else {
                0.0
            }
        }
        _ => 0.0,
    }
}

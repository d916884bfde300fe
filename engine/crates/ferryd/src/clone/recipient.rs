//! The recipient's clone task: connects to the donor as a replica does (the admin token), asks for the snapshot
//! (resuming after what the staging store holds, when asked to), takes its chunks within the throttle, checks
//! each chunk (CRC32C, order, encoding, the snapshot's announced size) and hands it to the staging writer, a
//! thread of its own behind a bounded channel (so checking the next chunks overlaps writing the last ones): it
//! writes the chunks into the staging store with the progress a resume starts from, one durable commit every
//! `--clone-durable-bytes` of rows and one when the copy ends however it ends (done, cancelled, failed), so a
//! resume continues exactly where the copy stopped, or after a crash from the last durable commit; at the end checks every table's rows and checksum against the donor's,
//! makes the staging store durable and installs it ([`ferry_core::node::Node::install_clone`]). Anything the
//! donor sends that is not that stream fails the clone, naming what was wrong; the staging store is then never
//! installed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ferry_client::{Client, ClientError};
use ferry_core::clone_chunk;
use ferry_core::gtid::GtidPosition;
use ferry_core::protocol::{CloneTable, Request, Response};
use ferry_core::store::Store;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};

use super::throttle::TokenBucket;
use super::{Cloning, Control, STAGING_FILE};
use crate::auth::AdminToken;

/// Longest wait for the donor to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest silence of the donor while the recipient waits for its next frame.
const SILENCE_MAX: Duration = Duration::from_secs(60);
/// Checked chunks waiting for the staging writer.
const WRITE_AHEAD: usize = 8;

/// One clone to run.
pub(super) struct Job {
    pub clone_id: String,
    pub donor: String,
    pub resume: bool,
    pub token: AdminToken,
    pub chunk_bytes: u32,
    /// Row data staged between durable commits.
    pub durable_bytes: u64,
}

/// How a clone that did not complete ended.
#[derive(Debug)]
pub(super) enum Ended {
    Cancelled,
    Failed(String),
}

fn failed(why: impl Into<String>) -> Ended {
    Ended::Failed(why.into())
}

/// What the staging store records with each chunk: where a resume continues.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Progress {
    clone_id: String,
    position: String,
    table: String,
    key: String,
    bytes_done: u64,
}

/// Runs the clone to its end.
pub(super) async fn run(cloning: &Arc<Cloning>, job: Job, mut control: watch::Receiver<Control>) -> Result<(), Ended> {
    let staging_path = cloning.node.config().data_dir.join(STAGING_FILE);
    let mut staging = open_staging(&staging_path, !job.resume).await?;
    let kept = if job.resume { read_progress(&staging, &job.clone_id).await? } else { None };
    let mut client = connect(&job).await?;
    let resume_after = kept.as_ref().map(|p| (p.table.clone(), p.key.clone()));
    let ask = Request::Clone { clone_id: job.clone_id.clone(), resume_after, chunk_bytes: job.chunk_bytes };
    client.send_raw(&ask.encode(1)).await.map_err(|e| failed(format!("asking {} for the clone: {e}", job.donor)))?;
    let mut stream = Stream::read(client, job.donor.clone());
    let (position, bytes_total, tables, resumed) = match stream.next(&mut control).await? {
        Response::CloneBegin { clone_id, resumed, position, bytes_total, tables } => {
            if clone_id != job.clone_id {
                return Err(failed(format!(
                    "the donor {} answered for clone {clone_id:?}, not {:?}: not this clone's stream",
                    job.donor, job.clone_id
                )));
            }
            (position, bytes_total, tables, resumed)
        }
        other => return Err(unexpected(&job, &other, "the clone's beginning (CloneBegin)")),
    };
    let parsed: GtidPosition = position.parse().map_err(|e| {
        failed(format!("the donor {}'s snapshot position {position:?} is not a GTID position: {e}", job.donor))
    })?;
    let mut bytes_done = 0;
    let mut after: Option<(String, String)> = None;
    match (&kept, resumed) {
        (Some(p), true) if p.position == position => {
            bytes_done = p.bytes_done;
            after = Some((p.table.clone(), p.key.clone()));
        }
        (Some(p), true) => {
            return Err(failed(format!(
                "the donor {} resumed clone {} at position {position}, but the copy so far is of position {}: \
                 start a new clone",
                job.donor, job.clone_id, p.position
            )))
        }
        (Some(_), false) => {
            tracing::info!(clone_id = %job.clone_id, "the donor no longer holds the snapshot: the clone starts over");
            drop(staging);
            staging = open_staging(&staging_path, true).await?;
        }
        (None, _) => {}
    }
    if bytes_done > bytes_total {
        return Err(failed(format!("the donor's snapshot is {bytes_total} bytes, less than the {bytes_done} copied")));
    }
    cloning.begun(&position, bytes_total, bytes_done).map_err(|e| failed(format!("recording the position: {e}")))?;
    let expected: BTreeMap<String, CloneTable> = tables.into_iter().map(|t| (t.name.clone(), t)).collect();
    let (to_writer, chunks) = mpsc::channel(WRITE_AHEAD);
    let store = staging.clone();
    let durable_bytes = job.durable_bytes;
    let writer = tokio::task::spawn_blocking(move || write_staged(&store, chunks, durable_bytes));
    let copy = Copy { position: &position, bytes_total, bytes_done, after, expected: &expected };
    let copied = copy.run(cloning, &job, &mut stream, &mut control, &to_writer).await;
    drop(to_writer); // the writer commits what it holds and ends
    let written = writer.await.map_err(|e| format!("{e}")).and_then(|w| w);
    if let Err(why) = written {
        return Err(failed(format!("writing the staging store: {why}")));
    }
    copied?;
    verify_and_install(cloning, &job, staging, &expected, &parsed).await
}

/// A chunk checked and handed to the staging writer, with the progress it brings.
struct Staged {
    table: String,
    rows: Vec<(String, Vec<u8>)>,
    progress: Vec<u8>,
}

/// The staging writer: the chunks, in order, into `staging`, in durable commits of about `durable_bytes` of rows
/// each (every commit records the progress of its last chunk), and a last one when the channel closes.
fn write_staged(staging: &Store, mut chunks: mpsc::Receiver<Staged>, durable_bytes: u64) -> Result<(), String> {
    let mut batch = None;
    while let Some(chunk) = chunks.blocking_recv() {
        let open = match &mut batch {
            Some(open) => open,
            None => batch.insert(staging.stage_batch().map_err(|e| e.to_string())?),
        };
        open.stage_rows(&chunk.table, &chunk.rows, &chunk.progress).map_err(|e| e.to_string())?;
        if open.bytes() >= durable_bytes {
            batch.take().expect("open").commit().map_err(|e| e.to_string())?;
        }
    }
    match batch {
        Some(open) => open.commit().map_err(|e| e.to_string()),
        None => Ok(()),
    }
}

/// The copy of the chunks after the stream's beginning.
struct Copy<'a> {
    position: &'a str,
    bytes_total: u64,
    bytes_done: u64,
    after: Option<(String, String)>,
    expected: &'a BTreeMap<String, CloneTable>,
}

impl Copy<'_> {
    /// Takes, checks and hands every chunk to the staging writer until the donor's end.
    async fn run(
        self,
        cloning: &Arc<Cloning>,
        job: &Job,
        stream: &mut Stream,
        control: &mut watch::Receiver<Control>,
        to_writer: &mpsc::Sender<Staged>,
    ) -> Result<(), Ended> {
        let (position, bytes_total, expected) = (self.position, self.bytes_total, self.expected);
        let mut bytes_done = self.bytes_done;
        let mut after = self.after;
        let mut bucket = TokenBucket::new(control.borrow().rate, u64::from(job.chunk_bytes));
        loop {
            let frame = stream.next(control).await.map_err(|e| match e {
                Ended::Failed(why) => failed(format!("after {bytes_done} of {bytes_total} bytes: {why}")),
                cancelled => cancelled,
            })?;
            let (table, data, crc32c) = match frame {
                Response::CloneChunk { table, data, crc32c } => (table, data, crc32c),
                Response::CloneEnd => break,
                other => return Err(unexpected(job, &other, "a chunk (CloneChunk) or the end (CloneEnd)")),
            };
            if !expected.contains_key(&table) {
                return Err(failed(format!(
                    "the donor sent a chunk of table {table:?}, which its snapshot does not list"
                )));
            }
            let rows = clone_chunk::decode(&table, &data, crc32c)
                .map_err(|e| failed(format!("the donor {}: {e}", job.donor)))?;
            let Some((first, _)) = rows.first() else {
                return Err(failed(format!("the donor sent an empty chunk of table {table:?}")));
            };
            if let Some((t, k)) = &after {
                if (t.as_str(), k.as_str()) >= (table.as_str(), first.as_str()) {
                    return Err(failed(format!(
                    "the donor's chunk of table {table:?} starts at key {first:?}, not after ({t:?}, {k:?}) already \
                     copied: the stream is out of order"
                )));
                }
            }
            let bytes: u64 = rows.iter().map(|(k, r)| clone_chunk::row_chunk_bytes(k, r)).sum();
            if bytes_done + bytes > bytes_total {
                return Err(failed(format!(
                    "the donor sent {} bytes, more than the {bytes_total} its snapshot announced",
                    bytes_done + bytes
                )));
            }
            wait_turn(cloning, &mut bucket, control, bytes).await?;
            bytes_done += bytes;
            let last = rows.last().expect("not empty").0.clone();
            let progress = Progress {
                clone_id: job.clone_id.clone(),
                position: position.to_string(),
                table: table.clone(),
                key: last.clone(),
                bytes_done,
            };
            let text = serde_json::to_vec(&progress).expect("progress serializes");
            if to_writer.send(Staged { table, rows, progress: text }).await.is_err() {
                return Err(failed("the staging writer stopped")); // its own error is the one reported
            }
            after = Some((progress.table, last));
            cloning.progressed(bytes_done);
        }
        if bytes_done != bytes_total {
            return Err(failed(format!(
            "the donor {} ended the clone after {bytes_done} of the {bytes_total} bytes it announced: the stream is \
             truncated",
            job.donor
        )));
        }
        Ok(())
    }
}

/// Every table's rows and checksum against the donor's, then the install.
async fn verify_and_install(
    cloning: &Arc<Cloning>,
    job: &Job,
    staging: Arc<Store>,
    expected: &BTreeMap<String, CloneTable>,
    position: &GtidPosition,
) -> Result<(), Ended> {
    let store = staging.clone();
    let sums = tokio::task::spawn_blocking(move || store.checksums().and_then(|s| store.stage_durable().map(|()| s)))
        .await
        .map_err(|e| failed(format!("checking the copy: {e}")))?
        .map_err(|e| failed(format!("checking the copy: {e}")))?;
    let copied: BTreeMap<&String, _> = sums.iter().filter(|(_, s)| s.rows > 0).collect();
    for (name, want) in expected {
        let (rows, checksum) = copied.get(name).map_or((0, 0), |s| (s.rows, s.checksum));
        if (rows, checksum) != (want.rows, want.checksum) {
            return Err(failed(format!(
                "table {name:?}: the copy has {rows} rows with checksum {checksum:016x}, the donor's snapshot {} rows \
                 with checksum {:016x}",
                want.rows, want.checksum
            )));
        }
    }
    if let Some(extra) = copied.keys().find(|n| !expected.contains_key(**n)) {
        return Err(failed(format!("the copy has table {extra:?}, which the donor's snapshot does not list")));
    }
    drop(staging); // the install opens the staging file itself
    if !cloning.installing() {
        return Err(Ended::Cancelled);
    }
    let node = cloning.node.clone();
    let streams = cloning.streams.clone();
    let (clone_id, position) = (job.clone_id.clone(), position.clone());
    tokio::task::spawn_blocking(move || {
        let quiesced = || streams.busy("a clone's install").map(|(_, why)| why);
        node.install_clone(STAGING_FILE, &clone_id, &position, &quiesced)
    })
    .await
    .map_err(|e| failed(format!("installing the copy: {e}")))?
    .map_err(|e| failed(format!("installing the copy: {e}")))
}

/// Waits until the throttle lets `bytes` in, and while paused; a cancel ends the wait.
async fn wait_turn(
    cloning: &Cloning,
    bucket: &mut TokenBucket,
    control: &mut watch::Receiver<Control>,
    bytes: u64,
) -> Result<(), Ended> {
    loop {
        let c = *control.borrow_and_update();
        if c.cancel {
            return Err(Ended::Cancelled);
        }
        bucket.set_rate(c.rate);
        if !c.pause {
            break;
        }
        cloning.set_paused(true);
        if control.changed().await.is_err() {
            return Err(Ended::Cancelled);
        }
    }
    cloning.set_paused(false);
    let wait = bucket.take(bytes);
    if wait.is_zero() {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return Ok(()),
            changed = control.changed() => {
                let c = *control.borrow_and_update();
                if changed.is_err() || c.cancel {
                    return Err(Ended::Cancelled);
                }
                if c.rate.is_none() {
                    return Ok(()); // the throttle was lifted
                }
                // Another rate applies from the next chunk on; a pause from the next chunk on too.
            }
        }
    }
}

/// The donor's frames, read by a task of their own (a read is not cancel-safe: one cut short by a throttle change
/// or a cancel would lose part of a frame), handed over one at a time; the task ends with the stream or when this
/// is dropped.
struct Stream {
    frames: mpsc::Receiver<Result<Response, String>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Stream {
    fn read(mut client: Client, donor: String) -> Self {
        let (tx, frames) = mpsc::channel(1);
        let reader = tokio::spawn(async move {
            loop {
                let read = match tokio::time::timeout(SILENCE_MAX, client.read_response()).await {
                    Err(_) => Err(format!("the donor {donor} sent nothing for {} s", SILENCE_MAX.as_secs())),
                    Ok(Ok((_, Response::Error { code, message }))) => {
                        Err(format!("the donor {donor} refused or ended the clone (error {code}): {message}"))
                    }
                    Ok(Ok((_, frame))) => Ok(frame),
                    Ok(Err(ClientError::Io(e))) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                        Err(format!("the donor {donor} closed the connection: the stream is truncated"))
                    }
                    Ok(Err(e)) => Err(format!("reading the donor {donor}'s stream: {e}")),
                };
                let end = read.is_err();
                if tx.send(read).await.is_err() || end {
                    return;
                }
            }
        });
        Stream { frames, reader }
    }

    /// The donor's next frame; a cancel, silence, a closed or broken stream end the clone.
    async fn next(&mut self, control: &mut watch::Receiver<Control>) -> Result<Response, Ended> {
        loop {
            if control.borrow().cancel {
                return Err(Ended::Cancelled);
            }
            tokio::select! {
                frame = self.frames.recv() => {
                    return match frame {
                        Some(frame) => frame.map_err(Ended::Failed),
                        None => Err(failed("the donor's stream ended")),
                    };
                }
                changed = control.changed() => {
                    if changed.is_err() {
                        return Err(Ended::Cancelled);
                    }
                }
            }
        }
    }
}

fn unexpected(job: &Job, frame: &Response, wanted: &str) -> Ended {
    let name = match frame {
        Response::Error { .. } => "an error",
        Response::Hello { .. } => "Hello",
        Response::AuthOk => "AuthOk",
        Response::Committed { .. } => "Committed",
        Response::Row { .. } => "Row",
        Response::Reached { .. } => "Reached",
        Response::Stats { .. } => "Stats",
        Response::Pong => "Pong",
        Response::Role { .. } => "Role",
        Response::ReplTxn { .. } => "ReplTxn",
        Response::Heartbeat { .. } => "Heartbeat",
        Response::Subscribed { .. } => "Subscribed",
        Response::CloneBegin { .. } => "CloneBegin",
        Response::CloneChunk { .. } => "CloneChunk",
        Response::CloneEnd => "CloneEnd",
    };
    failed(format!("the donor {} answered {name} where {wanted} was due: not a clone stream", job.donor))
}

async fn connect(job: &Job) -> Result<Client, Ended> {
    let mut client = tokio::time::timeout(CONNECT_TIMEOUT, Client::connect(&job.donor))
        .await
        .map_err(|_| failed(format!("connecting to the donor {} timed out", job.donor)))?
        .map_err(|e| failed(format!("connecting to the donor {}: {e}", job.donor)))?;
    client
        .auth(job.token.secret())
        .await
        .map_err(|e| failed(format!("authenticating to the donor {}: {e}", job.donor)))?;
    Ok(client)
}

/// The staging store, emptied first when `fresh`.
async fn open_staging(path: &std::path::Path, fresh: bool) -> Result<Arc<Store>, Ended> {
    let path: PathBuf = path.to_path_buf();
    tokio::task::spawn_blocking(move || -> Result<Arc<Store>, String> {
        if fresh {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("removing the old staging store {}: {e}", path.display())),
            }
        }
        Store::open(&path).map(Arc::new).map_err(|e| format!("opening the staging store {}: {e}", path.display()))
    })
    .await
    .map_err(|e| failed(e.to_string()))?
    .map_err(failed)
}

/// What the staging store holds of this clone (None: nothing, or another clone's copy).
async fn read_progress(staging: &Arc<Store>, clone_id: &str) -> Result<Option<Progress>, Ended> {
    let store = staging.clone();
    let bytes = tokio::task::spawn_blocking(move || store.clone_progress())
        .await
        .map_err(|e| failed(e.to_string()))?
        .map_err(|e| failed(format!("reading the staging store: {e}")))?;
    Ok(bytes.and_then(|b| serde_json::from_slice::<Progress>(&b).ok()).filter(|p| p.clone_id == clone_id))
}

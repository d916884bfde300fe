//! The IO side of a replication connection: connects to the master with the node's GTID position, streams its
//! binlog into the relay log (checking every event's checksum and each transaction's shape), reconnects with
//! bounded backoff after a network failure, and stops for good on an error the master says retrying cannot fix
//! (purged, ahead, diverged), naming the domain and both GTIDs as the master did.

use std::sync::Arc;
use std::time::Duration;

use ferry_client::{Client, ClientError, ErrorCode};
use ferry_core::binlog::event::{decode_event, Event, GtidEvent};
use ferry_core::clock::Clock;
use ferry_core::gtid::GtidPosition;
use ferry_core::node::Node;
use ferry_core::protocol::{Request, Response};
use ferry_core::relay::RelayWriter;

use super::shared::Shared;
use super::status::IoState;
use crate::auth::AdminToken;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// A master silent for this many heartbeat intervals is taken for gone.
const HEARTBEATS_MISSED_MAX: u32 = 3;
/// How often the IO side looks whether the SQL side freed relay space while it waits for it.
const RELAY_SPACE_POLL: Duration = Duration::from_millis(10);

pub struct IoSide {
    /// What is done with each frame of the master's stream.
    pub intake: Intake,
    pub master: String,
    pub server_id: u32,
    pub heartbeat_ms: u32,
    pub token: Option<AdminToken>,
    /// This node's addresses, told to the master for topology discovery.
    pub advertised: crate::Advertised,
}

/// The IO side without the network: takes the master's stream frame by frame — checks each transaction and
/// appends it to the relay log, notes heartbeats, says which confirmation to send back — and holds receiving
/// while the relay log is at its space bound. The production IO side feeds it from a socket, the replica
/// simulation from a simulated network.
pub struct Intake {
    pub shared: Arc<Shared>,
    pub relay: RelayWriter,
    /// `--relay-log-space-bytes-max`: at it, receiving waits for the SQL side to purge relay files.
    pub relay_space_bytes_max: u64,
    /// Where the next session starts: the start position, advanced by every transaction received.
    pub position: GtidPosition,
    /// A failed relay log write is a storage failure of the node (fail-stop), not only of this connection.
    pub node: Arc<Node>,
    /// What heartbeat times are read from.
    pub clock: Arc<dyn Clock>,
}

pub(crate) enum Failure {
    /// Worth trying again (network, master restarting).
    Retry(String),
    /// The master refused the position, or the stream cannot be trusted: stop.
    Fatal { code: String, message: String },
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Server { code: Some(code), message, .. } if code != ErrorCode::ShuttingDown => {
                Failure::Fatal { code: code.name().to_string(), message }
            }
            other => Failure::Retry(other.to_string()),
        }
    }
}

impl IoSide {
    pub async fn run(mut self) {
        let shared = self.intake.shared.clone();
        let mut stop = shared.stop_signal();
        let mut backoff = BACKOFF_MIN;
        loop {
            if shared.stopping() {
                break;
            }
            {
                let mut status = shared.status.lock();
                status.io_state = IoState::Connecting;
                status.waiting_for_relay_space = false;
            }
            let outcome = tokio::select! {
                r = self.session() => r,
                _ = stop.changed() => Ok(()),
            };
            match outcome {
                Ok(()) => break,
                Err(Failure::Fatal { code, message }) => {
                    shared.fail("io", &code, message);
                    return;
                }
                Err(Failure::Retry(why)) => {
                    {
                        let mut status = shared.status.lock();
                        status.io_state = IoState::Reconnecting;
                        status.reconnects += 1;
                    }
                    tracing::warn!(connection = %shared.name, master = %self.master, "lost the master ({why}); retrying in {backoff:?}");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.changed() => break,
                    }
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
            }
        }
        shared.status.lock().io_state = IoState::Stopped;
    }

    /// One connection to the master, until it fails or the connection is stopped.
    async fn session(&mut self) -> Result<(), Failure> {
        let Some(token) = self.token.clone() else {
            return Err(Failure::Fatal {
                code: "NO_TOKEN".into(),
                message: "replication authenticates with the admin token: start ferryd with --admin-token-file".into(),
            });
        };
        let mut client = tokio::time::timeout(CONNECT_TIMEOUT, Client::connect(&self.master))
            .await
            .map_err(|_| Failure::Retry(format!("connecting to {} timed out", self.master)))??;
        if let Ok(master) = client.peer_addr() {
            crate::plaintext::warn_replication_to(master);
        }
        client.auth(token.secret()).await?;
        let dump = Request::Dump {
            server_id: self.server_id,
            position: self.intake.position.to_string(),
            heartbeat_ms: self.heartbeat_ms,
            listen: self.advertised.listen.clone(),
            admin: self.advertised.admin.clone(),
        };
        client.send_raw(&dump.encode(1)).await?;
        self.intake.shared.status.lock().io_state = IoState::Connected;
        let silence = Duration::from_millis(u64::from(self.heartbeat_ms) * u64::from(HEARTBEATS_MISSED_MAX) + 1000);
        loop {
            let (_, frame) = tokio::time::timeout(silence, client.read_response())
                .await
                .map_err(|_| Failure::Retry(format!("no heartbeat from the master for {silence:?}")))??;
            // At the space bound nothing more is read: the master's stream waits in the socket.
            while !self.intake.has_room(&frame)? {
                tokio::time::sleep(RELAY_SPACE_POLL).await;
            }
            if let Some(ack) = self.intake.take(frame)? {
                client.send_raw(&ack.encode(0)).await?;
            }
        }
    }
}

impl Intake {
    /// Whether `frame` can be taken now. A transaction that would take the relay log's files past
    /// `relay_space_bytes_max` waits until the SQL side has read and deleted some: the file being written is
    /// closed first (a new one started), so that the SQL side can delete it once it has read it, and the status
    /// says the IO side waits until it fits.
    pub(crate) fn has_room(&mut self, frame: &Response) -> Result<bool, Failure> {
        let Response::ReplTxn { events, .. } = frame else { return Ok(true) };
        let fits = self.relay.fits(events.len() as u64, self.relay_space_bytes_max);
        let waiting = self.shared.status.lock().waiting_for_relay_space;
        match (fits, waiting) {
            (true, false) => {}
            (true, true) => self.shared.status.lock().waiting_for_relay_space = false,
            (false, true) => {}
            (false, false) => {
                let end = self.relay.rotate().map_err(|e| self.relay_failed(e))?;
                self.shared.relay_written(end);
                self.shared.status.lock().waiting_for_relay_space = true;
                tracing::debug!(connection = %self.shared.name, bytes = self.relay.space_bytes(), "waiting for relay log space");
            }
        }
        Ok(fits)
    }

    /// Takes one frame of the master's stream; returns the confirmation of receipt to send back, when the master
    /// asked for one (semi-sync), once the transaction is in the relay log.
    pub(crate) fn take(&mut self, frame: Response) -> Result<Option<Request>, Failure> {
        match frame {
            Response::ReplTxn { events, ack, file, end_offset } => {
                self.receive(&events)?;
                Ok(ack.then_some(Request::Ack { file, offset: end_offset }))
            }
            Response::Heartbeat { binlog_pos, .. } => {
                let mut status = self.shared.status.lock();
                status.last_heartbeat_us = Some(self.clock.now_us());
                if let Ok(pos) = binlog_pos.parse::<GtidPosition>() {
                    status.master_position = status.master_position.join(&pos);
                }
                Ok(None)
            }
            Response::Error { code, message } => {
                Err(ClientError::Server { code: ErrorCode::from_u16(code), raw_code: code, message }.into())
            }
            other => Err(Failure::Retry(format!("unexpected frame in the binlog stream: {other:?}"))),
        }
    }

    /// A failed relay log write is a storage failure of the node (fail-stop).
    fn relay_failed(&self, e: ferry_core::binlog::BinlogError) -> Failure {
        let why = self.node.fail_storage(format!("relay log write: {e}"));
        Failure::Fatal { code: "RELAY_WRITE".into(), message: format!("{e} (storage failed: {why})") }
    }

    /// Checks a received transaction (every checksum, GTID first, commit last with the right row count) and
    /// appends it to the relay log.
    fn receive(&mut self, events: &[u8]) -> Result<(), Failure> {
        let header = check_transaction(events)
            .map_err(|why| Failure::Retry(format!("bad transaction from the master: {why}")))?;
        let end = self.relay.append(events).map_err(|e| self.relay_failed(e))?;
        self.position.set(header.gtid);
        {
            let mut status = self.shared.status.lock();
            status.received(header.gtid);
            status.relay_log_space_bytes_peak = status.relay_log_space_bytes_peak.max(self.relay.space_bytes());
        }
        self.shared.relay_written(end);
        Ok(())
    }
}

/// The GTID event of a well-formed transaction's bytes.
fn check_transaction(mut bytes: &[u8]) -> Result<GtidEvent, String> {
    let mut header = None;
    let mut rows = 0usize;
    while !bytes.is_empty() {
        let (event, len) = decode_event(bytes).map_err(|e| e.to_string())?;
        bytes = &bytes[len..];
        match (event, header.is_some()) {
            (Event::Gtid(g), false) => header = Some(g),
            (Event::Rows { changes }, true) => rows += changes.len(),
            (Event::Commit { changes }, true) if changes as usize == rows && bytes.is_empty() => {
                return Ok(header.expect("checked"));
            }
            (other, _) => return Err(format!("unexpected {} event", other.type_name())),
        }
    }
    Err("transaction ends without a commit event".into())
}

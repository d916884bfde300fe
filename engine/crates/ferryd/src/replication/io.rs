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

#[derive(Debug)]
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use ferry_core::binlog::event::encode_event;
    use ferry_core::binlog::MAGIC;
    use ferry_core::clock::ManualClock;
    use ferry_core::gtid::Gtid;
    use ferry_core::node::NodeConfig;
    use ferry_core::protocol::ErrorCode;
    use ferry_core::relay::relay_file_bytes_for;
    use ferry_core::row::RowChange;
    use ferry_core::vfs::sim::SimFs;

    use super::*;
    use crate::replication::status::ConnectionStatus;

    const RELAY: &str = "/replica/relay/io";

    struct Fixture {
        intake: Intake,
        disk: SimFs,
        clock: ManualClock,
    }

    /// An intake on a simulated disk, its relay log bounded to `space_bytes_max`.
    fn fixture(space_bytes_max: u64) -> Fixture {
        let disk = SimFs::new();
        let clock = ManualClock::new(7_000_000);
        let mut config = NodeConfig::new(2, "/replica");
        config.fs = Arc::new(disk.clone());
        let node = Node::open(config, None).unwrap();
        let relay =
            RelayWriter::create_on(Arc::new(disk.clone()), Path::new(RELAY), relay_file_bytes_for(space_bytes_max))
                .unwrap();
        let mut shared = Shared::new("io", ConnectionStatus::default(), std::sync::Weak::new());
        shared.relay_space = relay.space();
        let intake = Intake {
            shared: Arc::new(shared),
            relay,
            relay_space_bytes_max: space_bytes_max,
            position: "0-1-4".parse().unwrap(),
            node,
            clock: clock.handle(),
        };
        Fixture { intake, disk, clock }
    }

    fn change(key: &str) -> RowChange {
        RowChange { table: "t".into(), key: key.into(), before: None, after: Some(Default::default()) }
    }

    /// The events of a transaction `0-1-seq` with `rows` row changes, as the master sends them.
    fn events(seq: u64, rows: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        let header = GtidEvent { gtid: Gtid::new(0, 1, seq), commit_id: 1, flags: 0, commit_ts_us: 0 };
        encode_event(&Event::Gtid(header), &mut bytes);
        encode_event(&Event::Rows { changes: (0..rows).map(|i| change(&format!("k{i}"))).collect() }, &mut bytes);
        encode_event(&Event::Commit { changes: rows as u32 }, &mut bytes);
        bytes
    }

    fn repl_txn(seq: u64, ack: bool) -> Response {
        Response::ReplTxn { file: "ferry-bin.000003".into(), end_offset: 100 * seq, events: events(seq, 2), ack }
    }

    #[test]
    fn a_transaction_goes_to_the_relay_log_moves_the_position_and_is_confirmed_when_asked() {
        let Fixture { mut intake, .. } = fixture(1 << 20);
        let mut reader = intake.relay.reader().unwrap();
        assert!(intake.has_room(&repl_txn(5, true)).unwrap());
        let ack = intake.take(repl_txn(5, true)).unwrap();
        assert_eq!(ack, Some(Request::Ack { file: "ferry-bin.000003".into(), offset: 500 }));
        assert_eq!(intake.take(repl_txn(6, false)).unwrap(), None, "no confirmation asked, none sent");
        assert_eq!(intake.position.to_string(), "0-1-6", "a reconnection resumes after what was received");
        let status = intake.shared.status.lock().clone();
        assert_eq!((status.received.to_string(), status.transactions_received), ("0-1-6".into(), 2));
        let written = intake.shared.relay_end().expect("the relay log's end is told to the SQL side");
        let read: Vec<u64> = std::iter::from_fn(|| reader.next(written).unwrap()).map(|t| t.gtid().seq).collect();
        assert_eq!(read, [5, 6]);
    }

    #[test]
    fn a_malformed_transaction_is_refused_before_the_relay_log_and_the_link_is_retried() {
        let good = events(5, 2);
        let mut cut_commit = Vec::new();
        let header = GtidEvent { gtid: Gtid::new(0, 1, 5), commit_id: 1, flags: 0, commit_ts_us: 0 };
        encode_event(&Event::Gtid(header), &mut cut_commit);
        encode_event(&Event::Rows { changes: vec![change("a")] }, &mut cut_commit);
        let mut short_count = cut_commit.clone();
        encode_event(&Event::Commit { changes: 2 }, &mut short_count);
        let mut rows_first = Vec::new();
        encode_event(&Event::Rows { changes: vec![] }, &mut rows_first);
        rows_first.extend_from_slice(&good);
        let mut trailing = good.clone();
        encode_event(&Event::Commit { changes: 0 }, &mut trailing);
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x40;
        let cases = [
            (cut_commit, "without a commit event"),
            (short_count, "unexpected commit"),
            (rows_first, "unexpected rows"),
            (trailing, "unexpected commit"),
            (flipped, ""),
        ];
        for (bytes, why) in cases {
            assert!(check_transaction(&bytes).unwrap_err().contains(why));
            let Fixture { mut intake, .. } = fixture(1 << 20);
            let frame = Response::ReplTxn { file: "f".into(), end_offset: 1, events: bytes, ack: true };
            match intake.take(frame) {
                Err(Failure::Retry(message)) => assert!(message.contains("bad transaction"), "{message}"),
                other => panic!("{other:?}"),
            }
            assert_eq!(intake.shared.relay_end(), None, "nothing written");
            assert_eq!(intake.position.to_string(), "0-1-4");
        }
        assert_eq!(check_transaction(&good).unwrap().gtid, Gtid::new(0, 1, 5));
    }

    #[test]
    fn a_heartbeat_is_timed_by_the_clock_and_raises_the_masters_position() {
        let Fixture { mut intake, clock, .. } = fixture(1 << 20);
        clock.advance(Duration::from_secs(2));
        let beat = |pos: &str| Response::Heartbeat { binlog_pos: pos.into(), file: "f".into(), offset: 0 };
        assert_eq!(intake.take(beat("0-1-9,1-2-3")).unwrap(), None);
        assert_eq!(intake.take(beat("0-1-7")).unwrap(), None, "an older one lowers nothing");
        assert_eq!(intake.take(beat("not a position")).unwrap(), None, "nor does a garbled one");
        let status = intake.shared.status.lock().clone();
        assert_eq!(status.last_heartbeat_us, Some(9_000_000));
        assert_eq!(status.master_position.to_string(), "0-1-9,1-2-3");
    }

    #[test]
    fn the_masters_refusal_stops_the_connection_but_its_shutdown_and_stray_frames_are_retried() {
        let Fixture { mut intake, .. } = fixture(1 << 20);
        match intake.take(Response::error(ErrorCode::PositionPurged, "domain 0: 0-1-4 was purged")) {
            Err(Failure::Fatal { code, message }) => {
                assert_eq!((code.as_str(), message.as_str()), ("POSITION_PURGED", "domain 0: 0-1-4 was purged"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(intake.take(Response::error(ErrorCode::ShuttingDown, "bye")), Err(Failure::Retry(_))));
        let stray = Response::Reached { position: "0-1-1".into() };
        assert!(matches!(intake.take(stray), Err(Failure::Retry(m)) if m.contains("unexpected frame")));
    }

    /// At the relay log's space bound a transaction waits: the file being written is closed so the SQL side can
    /// delete it once read, the status says the IO side waits, and it goes on once there is room.
    #[test]
    fn a_transaction_past_the_relay_space_bound_waits_until_the_sql_side_frees_space() {
        let len = events(5, 2).len() as u64;
        let Fixture { mut intake, .. } = fixture(len + 3 * MAGIC.len() as u64);
        let mut reader = intake.relay.reader().unwrap();
        let first = repl_txn(5, false);
        assert!(intake.has_room(&first).unwrap(), "an empty relay log takes any transaction");
        intake.take(first).unwrap();
        let second = repl_txn(6, false);
        assert!(!intake.has_room(&second).unwrap());
        assert!(intake.shared.status.lock().waiting_for_relay_space);
        assert_eq!(intake.shared.relay_end().unwrap().file_seq, 2, "the full file was closed");
        assert!(!intake.has_room(&second).unwrap(), "still full: no second rotation");
        let beat = Response::Heartbeat { binlog_pos: String::new(), file: "f".into(), offset: 0 };
        assert!(intake.has_room(&beat).unwrap(), "heartbeats need no room");
        // The SQL side reads the closed file and deletes it.
        let written = intake.shared.relay_end().unwrap();
        while reader.next(written).unwrap().is_some() {}
        assert!(intake.has_room(&second).unwrap());
        assert!(!intake.shared.status.lock().waiting_for_relay_space);
    }

    #[test]
    fn a_failed_relay_write_fails_the_nodes_storage() {
        let Fixture { mut intake, disk, .. } = fixture(1 << 20);
        disk.crash_now(0);
        match intake.take(repl_txn(5, true)) {
            Err(Failure::Fatal { code, .. }) => assert_eq!(code, "RELAY_WRITE"),
            other => panic!("{other:?}"),
        }
        assert!(intake.node.storage_failure().is_some_and(|why| why.contains("relay log write")));
    }
}

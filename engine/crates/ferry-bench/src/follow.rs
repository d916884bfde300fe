//! Following the master among a cluster's servers: write to one until it refuses writes or the connection is lost,
//! then move on to the next; once every server has been tried without one accepting a write, pause between rounds.
//!
//! Only the master accepts writes when the replicas are read-only (as a deployment keeps them): a read-only refusal
//! (the old master during a switchover, a replica) or a lost connection (a master that died) means "the master is
//! elsewhere now". A replica someone made writable would accept writes too — and take errant transactions — so a
//! new connection first asks the node its role and is used only when the node is writable and replicates from
//! nobody.

use std::time::Duration;

use ferry_client::{Client, ClientError};
use ferry_core::protocol::ErrorCode;

/// Pause before the next round once every server has been tried and none accepted a write (a switchover's window,
/// a failover under way): the clients then wait for a master rather than spin on refusals.
pub const ROUND_PAUSE_MS: u64 = 5;

/// Whether a failed request means "write somewhere else": the server is read-only (no longer the master), shutting
/// down, or gone.
pub fn moves_on(error: &ClientError) -> bool {
    matches!(error, ClientError::Io(_)) || matches!(error.code(), Some(ErrorCode::ReadOnly | ErrorCode::ShuttingDown))
}

/// A connection to `addr` when it is the master (writable, replicating from nobody); None when it cannot be reached
/// or is not the master. A node too old to answer the role question is taken at its word (its writes are refused
/// while it is read-only).
pub async fn connect_to_master(addr: &str) -> Option<Client> {
    let mut client = Client::connect(addr).await.ok()?;
    match client.role().await {
        Ok(role) if role.is_master() => Some(client),
        Ok(_) => None,
        Err(e) if matches!(e.code(), Some(ErrorCode::UnknownOperation)) => Some(client),
        Err(_) => None,
    }
}

/// Where one client writes now, among the servers it was given.
#[derive(Debug)]
pub struct Follower {
    /// The servers' protocol addresses, in the order they are tried.
    addrs: Vec<String>,
    /// Index in `addrs` of the server written to now.
    current: usize,
    /// Servers moved away from since one last accepted a write: `addrs.len()` of them is a round that found no
    /// master.
    tried: usize,
}

impl Follower {
    /// A follower starting at the first address; `addrs` must name at least one server.
    pub fn new(addrs: &[String]) -> anyhow::Result<Self> {
        let addrs: Vec<String> = addrs.iter().map(|a| a.trim().to_string()).filter(|a| !a.is_empty()).collect();
        anyhow::ensure!(!addrs.is_empty(), "--addr names no server");
        Ok(Follower { addrs, current: 0, tried: 0 })
    }

    /// The server to write to now.
    pub fn addr(&self) -> &str {
        &self.addrs[self.current]
    }

    /// The server written to accepted a write: it is the master.
    pub fn accepted(&mut self) {
        self.tried = 0;
    }

    /// Moves on to the next server (it refused, or could not be reached); returns how long to wait before trying
    /// it: nothing within a round, [`ROUND_PAUSE_MS`] once a whole round found no master.
    pub fn move_on(&mut self) -> Duration {
        self.current = (self.current + 1) % self.addrs.len();
        self.tried += 1;
        if self.tried >= self.addrs.len() {
            self.tried = 0;
            Duration::from_millis(ROUND_PAUSE_MS)
        } else {
            Duration::ZERO
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn a_read_only_refusal_or_a_lost_connection_moves_to_the_next_server() {
        let read_only =
            ClientError::Server { code: Some(ErrorCode::ReadOnly), raw_code: 7, message: "read-only".into() };
        let shutting_down =
            ClientError::Server { code: Some(ErrorCode::ShuttingDown), raw_code: 16, message: "bye".into() };
        let lost = ClientError::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(moves_on(&read_only));
        assert!(moves_on(&shutting_down));
        assert!(moves_on(&lost));
    }

    #[test]
    fn other_refusals_keep_the_server() {
        let busy = ClientError::Server { code: Some(ErrorCode::Timeout), raw_code: 12, message: "busy".into() };
        assert!(!moves_on(&busy));
        assert!(!moves_on(&ClientError::Protocol("bad frame".into())));
    }

    #[test]
    fn moves_round_the_servers_and_pauses_after_a_round_without_a_master() {
        let mut follower = Follower::new(&addrs(&["a:1", "b:2", "c:3"])).unwrap();
        assert_eq!(follower.addr(), "a:1");
        assert_eq!(follower.move_on(), Duration::ZERO);
        assert_eq!(follower.addr(), "b:2");
        assert_eq!(follower.move_on(), Duration::ZERO);
        assert_eq!(follower.addr(), "c:3");
        assert_eq!(follower.move_on(), Duration::from_millis(ROUND_PAUSE_MS));
        assert_eq!(follower.addr(), "a:1");
        // The next round starts afresh.
        assert_eq!(follower.move_on(), Duration::ZERO);
        assert_eq!(follower.addr(), "b:2");
    }

    #[test]
    fn a_write_accepted_starts_a_new_round() {
        let mut follower = Follower::new(&addrs(&["a:1", "b:2", "c:3"])).unwrap();
        follower.move_on();
        follower.move_on();
        follower.accepted(); // c:3 is the master
        assert_eq!(follower.move_on(), Duration::ZERO);
        assert_eq!(follower.move_on(), Duration::ZERO);
        assert_eq!(follower.addr(), "b:2");
        assert_eq!(follower.move_on(), Duration::from_millis(ROUND_PAUSE_MS));
    }

    #[test]
    fn one_server_pauses_before_every_retry() {
        let mut follower = Follower::new(&addrs(&["a:1"])).unwrap();
        assert_eq!(follower.move_on(), Duration::from_millis(ROUND_PAUSE_MS));
        assert_eq!(follower.addr(), "a:1");
        assert_eq!(follower.move_on(), Duration::from_millis(ROUND_PAUSE_MS));
    }

    #[test]
    fn blank_addresses_are_dropped_and_none_at_all_is_refused() {
        let follower = Follower::new(&addrs(&[" a:1", "", "b:2 "])).unwrap();
        assert_eq!(follower.addrs, addrs(&["a:1", "b:2"]));
        assert!(Follower::new(&addrs(&["", " "])).is_err());
    }
}

//! A change subscription that follows the master among a cluster's nodes: it subscribes to the node that is
//! writable and replicates from nobody ([`crate::Role::is_master`]), asks that node its role again every
//! [`FollowOptions::role_check`], and when the node is no longer the master (a switchover), or its stream ends
//! (a failover, a restart, a cut-off), it subscribes to whichever node is the master then, from its own
//! per-domain position: every transaction comes once, in each domain's order, whichever node sent it.
//!
//! A refusal that trying again cannot fix — the position purged on the new master, or ahead of it or diverged
//! from it (a failover lost transactions this consumer had seen), a wrong token, a bad request — ends it with
//! the node's error, which names the domain and both GTIDs.

use std::time::Duration;

use ferry_core::gtid::GtidPosition;
use tokio::time::Instant;

use crate::subscription::{Change, SubscribeOptions, Subscription, Update};
use crate::{Client, ClientError, ErrorCode};

/// How often the followed node is asked whether it is still the master, unless the options say otherwise.
pub const ROLE_CHECK_DEFAULT: Duration = Duration::from_secs(1);
/// Pause between rounds over the nodes that found no master.
pub const ROUND_PAUSE_DEFAULT: Duration = Duration::from_millis(100);
/// Longest wait for a node's connection or answer while looking for the master.
const LOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// How to follow.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    pub subscribe: SubscribeOptions,
    pub role_check: Duration,
    pub round_pause: Duration,
}

impl FollowOptions {
    pub fn new(subscribe: SubscribeOptions) -> Self {
        FollowOptions { subscribe, role_check: ROLE_CHECK_DEFAULT, round_pause: ROUND_PAUSE_DEFAULT }
    }
}

/// What following yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Followed {
    /// A committed transaction.
    Change(Change),
    /// Now following `node`, from `position`.
    Subscribed { node: String, position: GtidPosition },
    /// A round over every node found no master (or could not subscribe to it); it looks again after a pause.
    NoMaster { why: String },
}

/// Whether a subscription's error is the end (not worth another node or another try).
pub fn is_final(error: &ClientError) -> bool {
    use ErrorCode::*;
    matches!(
        error.code(),
        Some(PositionPurged | ReplicaAhead | Diverged | BadGtid | InvalidRequest | PermissionDenied | UnknownOperation)
    )
}

/// The followed node: its stream, and a second connection that asks its role.
struct Source {
    subscription: Subscription,
    probe: Client,
    checked: Instant,
}

/// A subscription following the master.
pub struct MasterSubscription {
    nodes: Vec<String>,
    options: FollowOptions,
    current: Option<Source>,
    /// After the last transaction handed out; `None` until the first subscription (without a start position)
    /// learns where it starts.
    position: Option<GtidPosition>,
    /// Why the last look for the master failed.
    last_miss: String,
}

impl MasterSubscription {
    /// Follows the master among `nodes` (protocol addresses; at least one).
    pub fn new(nodes: &[String], options: FollowOptions) -> Result<Self, ClientError> {
        let nodes: Vec<String> = nodes.iter().map(|a| a.trim().to_string()).filter(|a| !a.is_empty()).collect();
        if nodes.is_empty() {
            return Err(ClientError::Protocol("no node to follow".into()));
        }
        let position = options.subscribe.start.clone();
        Ok(MasterSubscription { nodes, options, current: None, position, last_miss: String::new() })
    }

    /// The position after the last transaction handed out: where to resume. `None` before the first subscription
    /// when no start position was given.
    pub fn position(&self) -> Option<&GtidPosition> {
        self.position.as_ref()
    }

    /// The node followed now.
    pub fn node(&self) -> Option<&str> {
        self.current.as_ref().map(|c| c.subscription.addr())
    }

    /// The next transaction, or a change of the node followed; an error only when following cannot go on.
    pub async fn next(&mut self) -> Result<Followed, ClientError> {
        loop {
            let Some(current) = &mut self.current else {
                if let Some(found) = self.look().await? {
                    return Ok(found);
                }
                continue;
            };
            // Not raced against a timer: a read cut short would lose part of a frame. The node sends a
            // heartbeat whenever it has nothing else to send, so an update comes at least that often.
            let update = current.subscription.next_update().await;
            let due = current.checked + self.options.role_check <= Instant::now();
            match update {
                Ok(Update::Change(change)) => {
                    self.position = Some(change.position.clone());
                    if due {
                        self.check_role().await;
                    }
                    return Ok(Followed::Change(change));
                }
                Ok(Update::Heartbeat { .. }) => {
                    if due {
                        self.check_role().await;
                    }
                }
                Err(e) if is_final(&e) => return Err(e),
                Err(_) => self.current = None,
            }
        }
    }

    /// Asks the followed node its role; lets it go unless it is still the master.
    async fn check_role(&mut self) {
        let Some(current) = &mut self.current else { return };
        let role = tokio::time::timeout(LOOK_TIMEOUT, current.probe.role()).await;
        match role {
            Ok(Ok(role)) if role.is_master() => current.checked = Instant::now(),
            _ => self.current = None,
        }
    }

    /// One round over the nodes: subscribes to the first that is the master, or says why none was (after a pause;
    /// `None` when that was said after the round before).
    async fn look(&mut self) -> Result<Option<Followed>, ClientError> {
        let mut misses = Vec::new();
        for node in self.nodes.clone() {
            match self.try_node(&node).await {
                Ok(Some(found)) => {
                    self.last_miss.clear();
                    return Ok(Some(found));
                }
                Ok(None) => misses.push(format!("{node}: not the master")),
                Err(e) if is_final(&e) => return Err(e),
                Err(e) => misses.push(format!("{node}: {e}")),
            }
        }
        tokio::time::sleep(self.options.round_pause).await;
        let why = misses.join("; ");
        if why == self.last_miss {
            return Ok(None);
        }
        self.last_miss = why.clone();
        Ok(Some(Followed::NoMaster { why }))
    }

    /// Subscribes to `node` if it is the master.
    async fn try_node(&mut self, node: &str) -> Result<Option<Followed>, ClientError> {
        let within = |what: &str| ClientError::Ended(format!("{node}: no answer to {what} within {LOOK_TIMEOUT:?}"));
        let mut probe =
            tokio::time::timeout(LOOK_TIMEOUT, Client::connect(node)).await.map_err(|_| within("connecting"))??;
        let role = tokio::time::timeout(LOOK_TIMEOUT, probe.role()).await.map_err(|_| within("Role"))??;
        if !role.is_master() {
            return Ok(None);
        }
        let mut options = self.options.subscribe.clone();
        options.start = self.position.clone();
        let subscription = tokio::time::timeout(LOOK_TIMEOUT, Subscription::open(node, &options))
            .await
            .map_err(|_| within("Subscribe"))??;
        let position = subscription.position().clone();
        self.position = Some(position.clone());
        self.current = Some(Source { subscription, probe, checked: Instant::now() });
        Ok(Some(Followed::Subscribed { node: node.to_string(), position }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(code: ErrorCode) -> ClientError {
        ClientError::Server { code: Some(code), raw_code: code as u16, message: "no".into() }
    }

    #[test]
    fn only_refusals_another_node_cannot_fix_end_the_following() {
        for code in
            [ErrorCode::PositionPurged, ErrorCode::ReplicaAhead, ErrorCode::Diverged, ErrorCode::PermissionDenied]
        {
            assert!(is_final(&refused(code)), "{code:?}");
        }
        for code in [
            ErrorCode::ShuttingDown,
            ErrorCode::ConsumerCutOff,
            ErrorCode::BinlogUnreadable,
            ErrorCode::TooManyConnections,
        ] {
            assert!(!is_final(&refused(code)), "{code:?}");
        }
        assert!(!is_final(&ClientError::Io(std::io::ErrorKind::ConnectionReset.into())));
        assert!(!is_final(&ClientError::Ended("closed".into())));
    }

    #[test]
    fn following_needs_a_node() {
        let options = FollowOptions::new(SubscribeOptions::new("c", "token-0123456789abcdef"));
        assert!(MasterSubscription::new(&[" ".into()], options).is_err());
    }
}

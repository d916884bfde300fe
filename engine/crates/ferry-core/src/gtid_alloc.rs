//! Allocation of seq_nos per domain: `next = counter + 1` under a short lock, raised by replicated GTIDs.
//!
//! Holes are allowed: a transaction that takes a number and then fails leaves a gap, and nothing downstream
//! depends on sequences being dense. A privileged client may bring its own server_id and seq_no (replaying a
//! binlog); strict mode then insists the seq_no is above everything this node already has in that domain.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::gtid::{DomainId, Gtid, GtidPosition, SeqNo, ServerId};

/// A GTID that would break strict mode (seq_no not above what the domain already has).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("strict mode: GTID {offered} is not above {have}, the newest seq_no this node has in domain {domain}")]
pub struct StrictModeViolation {
    pub domain: DomainId,
    /// The GTID that was refused.
    pub offered: Gtid,
    /// The newest GTID the node has in that domain.
    pub have: Gtid,
}

/// Per-domain seq_no counters of one node.
#[derive(Debug)]
pub struct GtidAllocator {
    /// This node's server_id, stamped on every GTID it allocates.
    server_id: ServerId,
    /// Newest GTID seen per domain (allocated, explicitly given or replicated): the counter is its seq_no.
    newest: Mutex<HashMap<DomainId, Gtid>>,
}

impl GtidAllocator {
    /// Starts the counters at the newest GTIDs the node has (binlog position joined with the replica position).
    pub fn new(server_id: ServerId, start: &GtidPosition) -> Self {
        GtidAllocator { server_id, newest: Mutex::new(start.iter().map(|g| (g.domain, g)).collect()) }
    }

    pub fn server_id(&self) -> ServerId {
        self.server_id
    }

    /// Takes the next seq_no in `domain` for this server.
    pub fn allocate(&self, domain: DomainId) -> Gtid {
        let mut newest = self.newest.lock();
        let seq = newest.get(&domain).map_or(0, |g| g.seq) + 1;
        let gtid = Gtid::new(domain, self.server_id, seq);
        newest.insert(domain, gtid);
        gtid
    }

    /// Accepts a GTID given from outside (privileged override or a replicated transaction).
    /// With `strict`, its seq_no must be above the domain's counter; otherwise the counter is only raised.
    pub fn claim(&self, gtid: Gtid, strict: bool) -> Result<(), StrictModeViolation> {
        let mut newest = self.newest.lock();
        match newest.get(&gtid.domain) {
            Some(have) if have.seq >= gtid.seq => {
                if strict {
                    return Err(StrictModeViolation { domain: gtid.domain, offered: gtid, have: *have });
                }
            }
            _ => {
                newest.insert(gtid.domain, gtid);
            }
        }
        Ok(())
    }

    /// Whether [`GtidAllocator::claim`] would accept `gtid` now (without claiming it).
    pub fn check(&self, gtid: Gtid, strict: bool) -> Result<(), StrictModeViolation> {
        match self.newest.lock().get(&gtid.domain) {
            Some(have) if strict && have.seq >= gtid.seq => {
                Err(StrictModeViolation { domain: gtid.domain, offered: gtid, have: *have })
            }
            _ => Ok(()),
        }
    }

    /// The counter of `domain` (0 when the domain was never seen).
    pub fn counter(&self, domain: DomainId) -> SeqNo {
        self.newest.lock().get(&domain).map_or(0, |g| g.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_per_domain_from_the_starting_position() {
        let alloc = GtidAllocator::new(7, &"0-1-10,3-2-4".parse().unwrap());
        assert_eq!(alloc.allocate(0), Gtid::new(0, 7, 11));
        assert_eq!(alloc.allocate(0), Gtid::new(0, 7, 12));
        assert_eq!(alloc.allocate(3), Gtid::new(3, 7, 5));
        assert_eq!(alloc.allocate(9), Gtid::new(9, 7, 1));
    }

    #[test]
    fn a_replicated_gtid_raises_the_counter() {
        let alloc = GtidAllocator::new(1, &GtidPosition::new());
        alloc.claim(Gtid::new(0, 2, 100), true).unwrap();
        assert_eq!(alloc.allocate(0), Gtid::new(0, 1, 101));
    }

    #[test]
    fn a_hole_left_by_a_failed_transaction_breaks_nothing() {
        let alloc = GtidAllocator::new(1, &GtidPosition::new());
        let _abandoned = alloc.allocate(0);
        assert_eq!(alloc.allocate(0).seq, 2);
    }

    #[test]
    fn strict_mode_refuses_a_seq_no_that_is_not_above_the_counter() {
        let alloc = GtidAllocator::new(1, &"0-1-10".parse().unwrap());
        let err = alloc.claim(Gtid::new(0, 5, 10), true).unwrap_err();
        assert_eq!(err.have, Gtid::new(0, 1, 10));
        assert!(err.to_string().contains("0-5-10") && err.to_string().contains("0-1-10"), "{err}");
        // Without strict mode the counter just stays where it is.
        alloc.claim(Gtid::new(0, 5, 3), false).unwrap();
        assert_eq!(alloc.counter(0), 10);
    }
}

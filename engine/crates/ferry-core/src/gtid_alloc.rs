//! Allocation of seq_nos per domain: `next = counter + 1` under a short lock, raised by replicated GTIDs.
//!
//! Holes are allowed: a transaction that takes a number and then fails leaves a gap, and nothing downstream
//! depends on sequences being dense. A privileged client may bring its own server_id and seq_no (replaying a
//! binlog); strict mode then insists the seq_no is above everything this node already has in that domain.
//!
//! A domain's seq_no is a u64 and is never wrapped: once its counter is at `u64::MAX` (reached by allocation or
//! raised there by a replicated or explicit GTID) every further allocation in that domain is refused with
//! [`AllocError::Exhausted`]; the domain must be retired (e.g. writes moved to another domain).

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

/// Why no GTID was handed out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    #[error(transparent)]
    Strict(#[from] StrictModeViolation),
    /// The domain's counter is at `u64::MAX`: the next seq_no does not exist.
    #[error("seq_no exhausted in domain {domain}: its newest GTID is {have}, and no seq_no follows {}", SeqNo::MAX)]
    Exhausted {
        domain: DomainId,
        /// The newest GTID of the domain (its seq_no is `u64::MAX`).
        have: Gtid,
    },
}

/// Per-domain seq_no counters of one node.
#[derive(Debug)]
pub struct GtidAllocator {
    /// This node's server_id, stamped on every GTID it allocates.
    server_id: ServerId,
    /// Newest GTID seen per domain (allocated, explicitly given or replicated): the counter is its seq_no.
    newest: Mutex<HashMap<DomainId, Gtid>>,
    /// Per domain, the seq_no high-water mark found at start-up: allocation goes above it (seq_nos someone may
    /// have seen though the binlog lost them), while strict mode still compares with `newest` only.
    floor: Mutex<HashMap<DomainId, SeqNo>>,
}

impl GtidAllocator {
    /// Starts the counters at the newest GTIDs the node has (binlog position joined with the replica position).
    pub fn new(server_id: ServerId, start: &GtidPosition) -> Self {
        Self::with_floor(server_id, start, HashMap::new())
    }

    /// Like [`GtidAllocator::new`], allocating above `floor` (the durable seq_no high-water mark) too.
    pub fn with_floor(server_id: ServerId, start: &GtidPosition, floor: HashMap<DomainId, SeqNo>) -> Self {
        let newest = Mutex::new(start.iter().map(|g| (g.domain, g)).collect());
        GtidAllocator { server_id, newest, floor: Mutex::new(floor) }
    }

    /// RESET MASTER with `reuse_seq_nos`: the counters start again from `start` (gtid_slave_pos), the high-water
    /// mark forgotten — seq_nos handed out before may be handed out again, by the DBA's explicit choice.
    pub fn reset(&self, start: &GtidPosition) {
        let mut newest = self.newest.lock();
        *newest = start.iter().map(|g| (g.domain, g)).collect();
        self.floor.lock().clear();
    }

    /// A rewind: the counters go back to `start` (the binlog's position after the cut), the floor stays, so what
    /// strict mode compares with is what the binlog holds and no seq_no handed out before is handed out again.
    pub fn rewind(&self, start: &GtidPosition) {
        *self.newest.lock() = start.iter().map(|g| (g.domain, g)).collect();
    }

    pub fn server_id(&self) -> ServerId {
        self.server_id
    }

    /// Takes the next seq_no in `domain` for this server; refused (counter untouched) when the domain's counter
    /// is already at `u64::MAX`.
    pub fn allocate(&self, domain: DomainId) -> Result<Gtid, AllocError> {
        let mut newest = self.newest.lock();
        let floor = self.floor.lock().get(&domain).copied().unwrap_or(0);
        let have = match newest.get(&domain).copied() {
            Some(g) if g.seq >= floor => Some(g),
            _ if floor > 0 => Some(Gtid::new(domain, self.server_id, floor)),
            other => other,
        };
        let seq = match have {
            None => 1,
            Some(have) => have.seq.checked_add(1).ok_or(AllocError::Exhausted { domain, have })?,
        };
        let gtid = Gtid::new(domain, self.server_id, seq);
        newest.insert(domain, gtid);
        Ok(gtid)
    }

    /// Raises the allocation floor of `gtid`'s domain to its seq_no: for a position that reaches the node without
    /// its transactions (gtid_slave_pos set by CHANGE MASTER, transactions passed over by the skip counter or a
    /// domain filter). Seq_nos are then handed out above it, while strict mode keeps comparing what arrives with
    /// what the node has — as MariaDB compares with its binlog, not with gtid_slave_pos — so a position set too
    /// high and then lowered again does not refuse the transactions that follow it.
    pub fn raise_floor(&self, gtid: Gtid) {
        let mut floor = self.floor.lock();
        let seq = floor.entry(gtid.domain).or_insert(0);
        *seq = (*seq).max(gtid.seq);
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

    #[test]
    fn a_raised_floor_moves_allocation_but_not_the_strict_mode_check() {
        let alloc = GtidAllocator::new(2, &"0-1-3".parse().unwrap());
        alloc.raise_floor(Gtid::new(0, 1, 50)); // gtid_slave_pos set too high by CHANGE MASTER
        alloc.claim(Gtid::new(0, 1, 4), true).expect("what follows the binlog is accepted");
        assert_eq!(alloc.allocate(0).unwrap(), Gtid::new(0, 2, 51), "handed out above the floor");
        alloc.raise_floor(Gtid::new(0, 1, 10)); // a lower floor changes nothing
        assert_eq!(alloc.allocate(0).unwrap(), Gtid::new(0, 2, 52));
    }
    use super::*;

    use proptest::prelude::*;

    fn at(gtid: Gtid) -> GtidPosition {
        let mut position = GtidPosition::new();
        position.set(gtid);
        position
    }

    #[test]
    fn allocates_per_domain_from_the_starting_position() {
        let alloc = GtidAllocator::new(7, &"0-1-10,3-2-4".parse().unwrap());
        assert_eq!(alloc.allocate(0), Ok(Gtid::new(0, 7, 11)));
        assert_eq!(alloc.allocate(0), Ok(Gtid::new(0, 7, 12)));
        assert_eq!(alloc.allocate(3), Ok(Gtid::new(3, 7, 5)));
        assert_eq!(alloc.allocate(9), Ok(Gtid::new(9, 7, 1)));
    }

    #[test]
    fn a_replicated_gtid_raises_the_counter() {
        let alloc = GtidAllocator::new(1, &GtidPosition::new());
        alloc.claim(Gtid::new(0, 2, 100), true).unwrap();
        assert_eq!(alloc.allocate(0), Ok(Gtid::new(0, 1, 101)));
    }

    #[test]
    fn a_hole_left_by_a_failed_transaction_breaks_nothing() {
        let alloc = GtidAllocator::new(1, &GtidPosition::new());
        let _abandoned = alloc.allocate(0);
        assert_eq!(alloc.allocate(0).unwrap().seq, 2);
    }

    #[test]
    fn the_last_seq_no_is_handed_out_once_then_allocation_is_refused_naming_the_domain() {
        let alloc = GtidAllocator::new(1, &at(Gtid::new(4, 1, u64::MAX - 1)));
        assert_eq!(alloc.allocate(4), Ok(Gtid::new(4, 1, u64::MAX)));
        let err = alloc.allocate(4).unwrap_err();
        assert_eq!(err, AllocError::Exhausted { domain: 4, have: Gtid::new(4, 1, u64::MAX) });
        assert!(err.to_string().contains("domain 4") && err.to_string().contains("exhausted"), "{err}");
        // Refused again, never wrapped to 0 or 1; the counter stays; other domains go on.
        assert!(alloc.allocate(4).is_err());
        assert_eq!(alloc.counter(4), u64::MAX);
        assert_eq!(alloc.allocate(5), Ok(Gtid::new(5, 1, 1)));
    }

    #[test]
    fn a_replicated_gtid_at_the_maximum_is_accepted_but_the_next_local_allocation_is_refused() {
        let alloc = GtidAllocator::new(1, &"0-1-10".parse().unwrap());
        alloc.claim(Gtid::new(0, 2, u64::MAX), true).unwrap();
        assert_eq!(alloc.counter(0), u64::MAX);
        let err = alloc.allocate(0).unwrap_err();
        assert_eq!(err, AllocError::Exhausted { domain: 0, have: Gtid::new(0, 2, u64::MAX) });
        // Strict mode refuses anything else in that domain: nothing is above u64::MAX.
        assert!(alloc.claim(Gtid::new(0, 3, u64::MAX), true).is_err());
    }

    #[test]
    fn a_starting_position_at_the_maximum_refuses_the_first_allocation() {
        let alloc = GtidAllocator::new(1, &at(Gtid::new(0, 9, u64::MAX)));
        assert!(matches!(alloc.allocate(0), Err(AllocError::Exhausted { domain: 0, .. })));
    }

    proptest! {
        /// Whatever the starting counter and however many allocations are asked for, every GTID handed out is
        /// exactly one above the previous one, none wraps, and once u64::MAX is out every later ask is refused.
        #[test]
        fn allocation_never_wraps(start in prop_oneof![0u64..16, (u64::MAX - 16)..=u64::MAX], asks in 1usize..40) {
            let position = if start == 0 { GtidPosition::new() } else { at(Gtid::new(0, 1, start)) };
            let alloc = GtidAllocator::new(1, &position);
            let mut last = start;
            for _ in 0..asks {
                match alloc.allocate(0) {
                    Ok(g) => {
                        prop_assert_eq!(g.seq, last + 1);
                        last = g.seq;
                    }
                    Err(AllocError::Exhausted { domain, have }) => {
                        prop_assert_eq!(domain, 0);
                        prop_assert_eq!(last, u64::MAX);
                        prop_assert_eq!(have.seq, u64::MAX);
                    }
                    Err(other) => prop_assert!(false, "unexpected {other}"),
                }
                prop_assert_eq!(alloc.counter(0), last);
            }
        }

        /// A replicated GTID raises the counter to any seq_no, u64::MAX included; allocation then either
        /// continues above it or is refused, never goes below it.
        #[test]
        fn claims_then_allocations_stay_above_the_claim(claimed in prop_oneof![1u64..1000, (u64::MAX - 3)..=u64::MAX]) {
            let alloc = GtidAllocator::new(1, &GtidPosition::new());
            alloc.claim(Gtid::new(0, 2, claimed), true).unwrap();
            match alloc.allocate(0) {
                Ok(g) => prop_assert_eq!(g.seq, claimed + 1),
                Err(AllocError::Exhausted { .. }) => prop_assert_eq!(claimed, u64::MAX),
                Err(other) => prop_assert!(false, "unexpected {other}"),
            }
        }
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

//! START ... UNTIL: which relayed transactions a connection applies, and when it has reached its UNTIL position.
//!
//! MariaDB's rule (START SLAVE UNTIL master_gtid_pos): per listed domain, the connection applies transactions up
//! to and including the UNTIL GTID's seq_no and stops before the first one with a greater seq_no; once every
//! listed domain has reached or passed its UNTIL GTID, the connection stops. Unlisted domains stop at once
//! (nothing of them is applied). A domain's UNTIL seq_no may fall in a hole (a seq_no no transaction has, e.g. a
//! client-set seq_no jump or a transaction that failed after taking its number): the domain has then *passed* its
//! UNTIL when the first transaction above it arrives, although the applied position never equals it.

use std::collections::BTreeSet;

use ferry_core::gtid::{DomainId, Gtid, GtidPosition};

/// One connection's UNTIL position and which of its domains the relay log has already gone past.
#[derive(Debug, Clone)]
pub struct Until {
    /// The UNTIL position: per listed domain, the last seq_no to apply.
    stop: GtidPosition,
    /// Listed domains in which a transaction above the UNTIL seq_no was read: everything of the domain up to the
    /// UNTIL GTID is in the relay log before it (a domain's transactions arrive in seq_no order).
    passed: BTreeSet<DomainId>,
}

impl Until {
    pub fn new(stop: GtidPosition) -> Self {
        Until { stop, passed: BTreeSet::new() }
    }

    pub fn position(&self) -> &GtidPosition {
        &self.stop
    }

    /// Whether a transaction read from the relay log is applied: its domain is listed and its seq_no is not above
    /// the domain's UNTIL. The first one above marks its domain passed.
    pub fn admits(&mut self, gtid: Gtid) -> bool {
        match self.stop.get(gtid.domain) {
            None => false,
            Some(stop) if gtid.seq <= stop.seq => true,
            Some(_) => {
                self.passed.insert(gtid.domain);
                false
            }
        }
    }

    /// Whether the connection has reached its UNTIL position: in every listed domain the applied position is at
    /// or past the UNTIL seq_no, or a transaction past it was read and none of the domain's admitted
    /// transactions is still waiting to be applied (`pending`).
    pub fn reached(&self, applied: &GtidPosition, pending: impl Fn(DomainId) -> bool) -> bool {
        self.stop.iter().all(|stop| {
            applied.get(stop.domain).is_some_and(|a| a.seq >= stop.seq)
                || (self.passed.contains(&stop.domain) && !pending(stop.domain))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(text: &str) -> GtidPosition {
        text.parse().unwrap()
    }

    #[test]
    fn applies_up_to_and_including_the_until_seq_no_and_nothing_unlisted() {
        let mut until = Until::new(pos("0-1-5,1-1-2"));
        assert!(until.admits(Gtid::new(0, 1, 4)));
        assert!(until.admits(Gtid::new(0, 1, 5)));
        assert!(!until.admits(Gtid::new(0, 1, 6)));
        assert!(until.admits(Gtid::new(1, 2, 2)), "another server_id in a listed domain counts by seq_no");
        assert!(!until.admits(Gtid::new(7, 1, 1)), "unlisted domains stop at once");
    }

    #[test]
    fn reached_when_every_listed_domain_is_at_its_until() {
        let until = Until::new(pos("0-1-5,1-1-2"));
        let none_pending = |_| false;
        assert!(!until.reached(&pos("0-1-5"), none_pending), "domain 1 still short");
        assert!(!until.reached(&pos("0-1-5,1-1-1"), none_pending));
        assert!(until.reached(&pos("0-1-5,1-1-2"), none_pending));
        assert!(until.reached(&pos("0-1-9,1-1-3,4-1-1"), none_pending), "past it counts as reached");
    }

    /// The rule with a hole: UNTIL 0-1-5 while the master has 0-1-3 then 0-1-8. 0-1-8 is the first transaction
    /// past the position: the domain stops before it, at 0-1-3, once 0-1-3 is applied.
    #[test]
    fn an_until_inside_a_hole_is_passed_at_the_first_transaction_above_it() {
        let mut until = Until::new(pos("0-1-5"));
        assert!(until.admits(Gtid::new(0, 1, 3)));
        assert!(!until.reached(&pos("0-1-2"), |_| true), "nothing past the hole seen yet");
        assert!(!until.admits(Gtid::new(0, 1, 8)));
        assert!(!until.reached(&pos("0-1-2"), |d| d == 0), "0-1-3 is still to be applied");
        assert!(until.reached(&pos("0-1-3"), |_| false));
    }

    #[test]
    fn a_hole_in_one_domain_does_not_stop_the_others_early() {
        let mut until = Until::new(pos("0-1-5,1-1-4"));
        assert!(!until.admits(Gtid::new(0, 1, 9)));
        assert!(!until.reached(&pos("0-1-3,1-1-2"), |_| false), "domain 1 has neither reached nor passed 1-1-4");
        assert!(until.admits(Gtid::new(1, 1, 4)));
        assert!(until.reached(&pos("0-1-3,1-1-4"), |_| false));
    }
}

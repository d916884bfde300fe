//! Which transactions get printed: the start point's skipping, the domain list and the stop position.
//!
//! A transaction is judged once, at its GTID event; its rows and commit follow that verdict. Events outside
//! transactions are not judged here: they are always printed.

use std::collections::{BTreeMap, BTreeSet};

use ferry_core::binlog::seek::StartPoint;
use ferry_core::{DomainId, Gtid, GtidPosition};

/// Where a listed domain stops: its stop GTID, and whether a transaction at it or past it has been seen.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stop {
    at: Gtid,
    reached: bool,
    passed: bool,
}

/// Decides, GTID by GTID, what is printed.
#[derive(Debug, Clone)]
pub struct TxnFilter {
    /// From `--start-position`: domains skipped until the replica's GTID has gone by.
    start: Option<StartPoint>,
    /// From `--domain`: `None` prints every domain.
    domains: Option<BTreeSet<DomainId>>,
    /// From `--stop-position`, per listed domain.
    stops: BTreeMap<DomainId, Stop>,
}

impl TxnFilter {
    pub fn new(start: Option<StartPoint>, domains: Option<BTreeSet<DomainId>>, stop: &GtidPosition) -> Self {
        let stops = stop.iter().map(|at| (at.domain, Stop { at, reached: false, passed: false })).collect();
        TxnFilter { start, domains, stops }
    }

    /// Whether the transaction with this GTID is printed. Call it for every transaction, in binlog order.
    pub fn admit(&mut self, gtid: Gtid) -> bool {
        // Every filter sees every GTID, so each keeps its state whatever the others decide.
        let after_start = self.start.as_mut().is_none_or(|start| start.admit(gtid));
        let before_stop = match self.stops.get_mut(&gtid.domain) {
            None => true,
            Some(stop) => {
                stop.reached |= gtid.seq >= stop.at.seq;
                stop.passed |= gtid.seq > stop.at.seq;
                !stop.passed
            }
        };
        let in_domains = self.domains.as_ref().is_none_or(|d| d.contains(&gtid.domain));
        after_start && before_stop && in_domains
    }

    /// True once nothing more can be printed: every domain that may be printed has passed its stop GTID.
    /// Never true without a `--domain` list, since any domain may still come.
    pub fn finished(&self) -> bool {
        self.domains
            .as_ref()
            .is_some_and(|domains| domains.iter().all(|d| self.stops.get(d).is_some_and(|stop| stop.passed)))
    }

    /// True once every domain that may be printed has reached its stop GTID: a reader that follows a stream
    /// (rather than a file, where the next GTID is at hand) stops there instead of waiting for a later one.
    pub fn reached(&self) -> bool {
        self.domains
            .as_ref()
            .is_some_and(|domains| domains.iter().all(|d| self.stops.get(d).is_some_and(|stop| stop.reached)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(text: &str) -> GtidPosition {
        text.parse().unwrap()
    }

    fn g(domain: DomainId, seq: u64) -> Gtid {
        Gtid::new(domain, 1, seq)
    }

    #[test]
    fn with_no_options_everything_is_printed_and_it_never_finishes() {
        let mut f = TxnFilter::new(None, None, &GtidPosition::new());
        assert!((1..5).all(|n| f.admit(g(n as DomainId % 2, n))));
        assert!(!f.finished());
    }

    #[test]
    fn the_domain_list_keeps_only_its_domains() {
        let mut f = TxnFilter::new(None, Some(BTreeSet::from([1, 3])), &GtidPosition::new());
        let admitted: Vec<DomainId> = (0..5).filter(|&d| f.admit(g(d, 1))).collect();
        assert_eq!(admitted, vec![1, 3]);
    }

    #[test]
    fn the_stop_gtid_is_included_and_its_domain_stops_after_it() {
        let mut f = TxnFilter::new(None, None, &pos("0-1-2"));
        assert!(f.admit(g(0, 1)));
        assert!(f.admit(g(0, 2)));
        assert!(f.admit(g(1, 9)), "domains not listed are unaffected");
        assert!(!f.admit(g(0, 3)));
        // Once past, the domain stays stopped even if a lower seq_no follows (strict mode off).
        assert!(!f.admit(g(0, 1)));
        assert!(f.admit(g(1, 10)));
    }

    #[test]
    fn it_finishes_when_every_listed_domain_has_passed_its_stop() {
        let mut f = TxnFilter::new(None, Some(BTreeSet::from([0, 1])), &pos("0-1-1,1-1-1"));
        assert!(f.admit(g(0, 1)) && f.admit(g(1, 1)));
        assert!(!f.admit(g(0, 2)));
        assert!(!f.finished(), "domain 1 may still print");
        assert!(!f.admit(g(1, 2)));
        assert!(f.finished());
    }

    #[test]
    fn a_followed_stream_stops_once_every_listed_domain_reached_its_stop() {
        let mut f = TxnFilter::new(None, Some(BTreeSet::from([0, 1])), &pos("0-1-2,1-1-1"));
        assert!(f.admit(g(1, 1)));
        assert!(!f.reached(), "domain 0 is not at 0-1-2 yet");
        assert!(f.admit(g(0, 2)));
        assert!(f.reached() && !f.finished(), "reached, not passed");
        assert!(!TxnFilter::new(None, None, &pos("0-1-1")).reached(), "any domain may still come");
    }

    #[test]
    fn a_printed_domain_without_a_stop_keeps_it_running() {
        let mut f = TxnFilter::new(None, Some(BTreeSet::from([0, 2])), &pos("0-1-1"));
        assert!(!f.admit(g(0, 5)));
        assert!(!f.finished());
        let f = TxnFilter::new(None, None, &pos("0-1-1"));
        assert!(!f.finished());
    }

    #[test]
    fn the_start_point_skips_each_domain_through_the_replicas_gtid() {
        let start = StartPoint { file_index: 0, offset: 4, skip_through: BTreeMap::from([(0, g(0, 2))]) };
        let mut f = TxnFilter::new(Some(start), None, &GtidPosition::new());
        assert!(!f.admit(g(0, 1)));
        assert!(f.admit(g(1, 1)), "a domain the replica has not seen starts at once");
        assert!(!f.admit(g(0, 2)));
        assert!(f.admit(g(0, 3)));
    }

    #[test]
    fn a_stop_is_counted_even_for_transactions_the_start_skips() {
        let start = StartPoint { file_index: 0, offset: 4, skip_through: BTreeMap::from([(0, g(0, 5))]) };
        let mut f = TxnFilter::new(Some(start), Some(BTreeSet::from([0])), &pos("0-1-3"));
        assert!(!f.admit(g(0, 4)));
        assert!(f.finished());
    }
}

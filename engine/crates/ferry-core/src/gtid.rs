//! Global transaction IDs (`domain-server-seq`), positions (one GTID per domain) and their math.
//!
//! Text forms follow MariaDB: a GTID is `0-1-100`; a position is `0-1-100,1-2-50`, sorted by domain, at most
//! one GTID per domain. Parse errors carry the byte column of the first bad character so a caller can point at it.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Replication domain: an independent, strictly ordered stream of transactions.
pub type DomainId = u32;
/// The server that first committed a transaction.
pub type ServerId = u32;
/// Sequence number of a transaction, allocated per domain.
pub type SeqNo = u64;

/// One global transaction ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Gtid {
    /// Stream the transaction belongs to; order is only defined inside one domain.
    pub domain: DomainId,
    /// Server that originally committed it; kept unchanged through replication.
    pub server: ServerId,
    /// Position in the domain's sequence; strictly increasing in a binlog under strict mode.
    pub seq: SeqNo,
}

impl Gtid {
    pub const fn new(domain: DomainId, server: ServerId, seq: SeqNo) -> Self {
        Gtid { domain, server, seq }
    }
}

impl fmt::Display for Gtid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.domain, self.server, self.seq)
    }
}

/// Why a GTID or position text was rejected, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid GTID text {text:?} at column {column}: {reason}")]
pub struct GtidParseError {
    /// The whole text that was parsed.
    pub text: String,
    /// 1-based column of the offending character (one past the end for a truncated text).
    pub column: usize,
    /// What was expected there.
    pub reason: String,
}

impl GtidParseError {
    /// The text with a caret under the offending column, for terminals and logs.
    pub fn pointer(&self) -> String {
        format!("{}\n{}^", self.text, " ".repeat(self.column.saturating_sub(1)))
    }
}

/// A cursor over GTID text that knows its column, so every error can point at a character.
struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner { text, bytes: text.as_bytes(), at: 0 }
    }

    fn error(&self, at: usize, reason: impl Into<String>) -> GtidParseError {
        GtidParseError { text: self.text.to_string(), column: at + 1, reason: reason.into() }
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// Reads a decimal number without sign or leading zeros (except `0` itself), checked against `max`.
    fn number(&mut self, what: &str, max: u64) -> Result<u64, GtidParseError> {
        let start = self.at;
        let mut value: u64 = 0;
        while let Some(&b) = self.bytes.get(self.at) {
            if !b.is_ascii_digit() {
                break;
            }
            if self.at > start && self.bytes[start] == b'0' {
                return Err(self.error(start, format!("{what} has a leading zero")));
            }
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
                .filter(|v| *v <= max)
                .ok_or_else(|| self.error(start, format!("{what} is larger than {max}")))?;
            self.at += 1;
        }
        if self.at == start {
            let reason = match self.bytes.get(self.at) {
                None => format!("expected {what}, found end of text"),
                Some(&c) => format!("expected {what} (a decimal number), found {:?}", c as char),
            };
            return Err(self.error(self.at, reason));
        }
        Ok(value)
    }

    fn expect(&mut self, sep: u8, after: &str) -> Result<(), GtidParseError> {
        match self.bytes.get(self.at) {
            Some(&c) if c == sep => {
                self.at += 1;
                Ok(())
            }
            None => Err(self.error(self.at, format!("expected '{}' after {after}, found end of text", sep as char))),
            Some(&c) => {
                Err(self.error(self.at, format!("expected '{}' after {after}, found {:?}", sep as char, c as char)))
            }
        }
    }

    fn gtid(&mut self) -> Result<Gtid, GtidParseError> {
        let domain = self.number("domain_id", u64::from(u32::MAX))? as DomainId;
        self.expect(b'-', "domain_id")?;
        let server = self.number("server_id", u64::from(u32::MAX))? as ServerId;
        self.expect(b'-', "server_id")?;
        let seq = self.number("seq_no", u64::MAX)?;
        Ok(Gtid { domain, server, seq })
    }
}

impl FromStr for Gtid {
    type Err = GtidParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut scanner = Scanner::new(text);
        let gtid = scanner.gtid()?;
        if !scanner.done() {
            let c = scanner.bytes[scanner.at] as char;
            return Err(scanner.error(scanner.at, format!("unexpected {c:?} after seq_no")));
        }
        Ok(gtid)
    }
}

/// A replication position: at most one GTID per domain (the newest applied or written in that domain).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct GtidPosition {
    /// Newest GTID per domain; a BTreeMap keeps the text form sorted by domain.
    by_domain: BTreeMap<DomainId, Gtid>,
}

impl GtidPosition {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a position from GTIDs; a later GTID replaces an earlier one of the same domain when its seq_no is higher.
    pub fn from_gtids(gtids: impl IntoIterator<Item = Gtid>) -> Self {
        let mut pos = GtidPosition::new();
        for gtid in gtids {
            pos.advance(gtid);
        }
        pos
    }

    pub fn get(&self, domain: DomainId) -> Option<Gtid> {
        self.by_domain.get(&domain).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = Gtid> + '_ {
        self.by_domain.values().copied()
    }

    pub fn domains(&self) -> impl Iterator<Item = DomainId> + '_ {
        self.by_domain.keys().copied()
    }

    pub fn len(&self) -> usize {
        self.by_domain.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_domain.is_empty()
    }

    /// Sets the domain's GTID unconditionally (e.g. an explicit CHANGE MASTER position).
    pub fn set(&mut self, gtid: Gtid) {
        self.by_domain.insert(gtid.domain, gtid);
    }

    pub fn remove(&mut self, domain: DomainId) -> Option<Gtid> {
        self.by_domain.remove(&domain)
    }

    /// Records `gtid` when it is newer (higher seq_no) than what the domain holds; returns whether it moved.
    pub fn advance(&mut self, gtid: Gtid) -> bool {
        match self.by_domain.get(&gtid.domain) {
            Some(have) if have.seq >= gtid.seq => false,
            _ => {
                self.by_domain.insert(gtid.domain, gtid);
                true
            }
        }
    }

    /// True when, for every domain `other` has, `self` has a GTID with seq_no ≥ it (design.md's ahead-of).
    /// Reflexive, antisymmetric on seq_nos, transitive: a partial order.
    pub fn is_ahead_of(&self, other: &GtidPosition) -> bool {
        other.by_domain.values().all(|theirs| self.get(theirs.domain).is_some_and(|mine| mine.seq >= theirs.seq))
    }

    /// Transactions by which `self` leads `other` per domain (seq_no difference, counting a missing domain as 0).
    /// Domains where `self` is not ahead are omitted. With holes this is an upper bound, which is what lag needs.
    pub fn difference(&self, other: &GtidPosition) -> BTreeMap<DomainId, u64> {
        self.by_domain
            .values()
            .filter_map(|mine| {
                let theirs = other.get(mine.domain).map_or(0, |g| g.seq);
                (mine.seq > theirs).then(|| (mine.domain, mine.seq - theirs))
            })
            .collect()
    }

    /// The least position ahead of both: per domain, the GTID with the higher seq_no (ties keep `self`'s).
    pub fn join(&self, other: &GtidPosition) -> GtidPosition {
        let mut out = self.clone();
        for gtid in other.iter() {
            out.advance(gtid);
        }
        out
    }
}

impl fmt::Display for GtidPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, gtid) in self.by_domain.values().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{gtid}")?;
        }
        Ok(())
    }
}

impl FromStr for GtidPosition {
    type Err = GtidParseError;

    /// Parses `d-s-n[,d-s-n…]`; the empty text is the empty position. Spaces after commas are tolerated
    /// (MariaDB prints none, operators type them); a domain given twice is rejected.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut pos = GtidPosition::new();
        let mut scanner = Scanner::new(text);
        if text.is_empty() {
            return Ok(pos);
        }
        loop {
            let start = scanner.at;
            let gtid = scanner.gtid()?;
            if pos.by_domain.insert(gtid.domain, gtid).is_some() {
                return Err(scanner.error(start, format!("domain {} appears twice in the position", gtid.domain)));
            }
            if scanner.done() {
                return Ok(pos);
            }
            scanner.expect(b',', "seq_no")?;
            while scanner.bytes.get(scanner.at) == Some(&b' ') {
                scanner.at += 1;
            }
        }
    }
}

impl Serialize for GtidPosition {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GtidPosition {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// `gtid_binlog_state`: the last GTID per (domain, server) pair written to a binlog.
/// It is what a binlog file's GTID-list event carries; its per-domain newest is `gtid_binlog_pos`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BinlogState {
    /// Last seq_no per (domain, server); BTreeMap for a stable encoding order.
    by_pair: BTreeMap<(DomainId, ServerId), SeqNo>,
    /// Newest GTID per domain (the binlog position), kept alongside so lookups are O(log n).
    newest: GtidPosition,
}

impl BinlogState {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn from_gtids(gtids: impl IntoIterator<Item = Gtid>) -> Self {
        let mut state = BinlogState::new();
        for gtid in gtids {
            state.record(gtid);
        }
        state
    }

    /// Records a GTID written to the binlog. In a binlog, a domain's last written GTID is its newest,
    /// so the position follows the last write even when (strict mode off) its seq_no went down.
    pub fn record(&mut self, gtid: Gtid) {
        self.by_pair.insert((gtid.domain, gtid.server), gtid.seq);
        self.newest.set(gtid);
    }

    /// The per-domain newest GTIDs: `gtid_binlog_pos`.
    pub fn position(&self) -> &GtidPosition {
        &self.newest
    }

    /// Every (domain, server) entry, sorted.
    pub fn gtids(&self) -> Vec<Gtid> {
        let mut out: Vec<Gtid> = self.by_pair.iter().map(|(&(d, s), &n)| Gtid::new(d, s, n)).collect();
        // The domain's newest entry goes last within its domain, so rebuilding from this list restores `newest`.
        out.sort_by_key(|g| (g.domain, self.newest.get(g.domain) == Some(*g), g.server));
        out
    }

    /// The last seq_no this state holds for `(domain, server)`.
    pub fn seq_of(&self, domain: DomainId, server: ServerId) -> Option<SeqNo> {
        self.by_pair.get(&(domain, server)).copied()
    }

    /// Whether this exact GTID is the recorded last one of its (domain, server) pair.
    pub fn contains(&self, gtid: Gtid) -> bool {
        self.seq_of(gtid.domain, gtid.server) == Some(gtid.seq)
    }

    pub fn is_empty(&self) -> bool {
        self.by_pair.is_empty()
    }

    /// The (domain, server) entries of one domain, sorted by server.
    pub fn domain_entries(&self, domain: DomainId) -> Vec<Gtid> {
        self.by_pair.range((domain, 0)..=(domain, ServerId::MAX)).map(|(&(d, s), &n)| Gtid::new(d, s, n)).collect()
    }

    /// Forgets a domain entirely (FLUSH BINARY LOGS DELETE_DOMAIN_ID).
    pub fn remove_domain(&mut self, domain: DomainId) {
        self.by_pair.retain(|&(d, _), _| d != domain);
        self.newest.remove(domain);
    }
}

impl fmt::Display for BinlogState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, gtid) in self.gtids().iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{gtid}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pos(text: &str) -> GtidPosition {
        text.parse().unwrap()
    }

    #[test]
    fn parses_and_formats_a_gtid() {
        let g: Gtid = "0-1-100".parse().unwrap();
        assert_eq!(g, Gtid::new(0, 1, 100));
        assert_eq!(g.to_string(), "0-1-100");
        assert_eq!("4294967295-4294967295-18446744073709551615".parse::<Gtid>().unwrap().seq, u64::MAX);
    }

    #[test]
    fn errors_point_at_the_bad_character() {
        let e = "0-1-x".parse::<Gtid>().unwrap_err();
        assert_eq!(e.column, 5);
        assert!(e.reason.contains("seq_no"), "{e}");
        assert_eq!(e.pointer(), "0-1-x\n    ^");

        let e = "0-1".parse::<Gtid>().unwrap_err();
        assert_eq!(e.column, 4);
        assert!(e.reason.contains("end of text"), "{e}");

        let e = "0-1-5 ".parse::<Gtid>().unwrap_err();
        assert_eq!(e.column, 6);

        let e = "0_1-5".parse::<Gtid>().unwrap_err();
        assert_eq!(e.column, 2);
        assert!(e.reason.contains("'-'"), "{e}");

        let e = "4294967296-1-1".parse::<Gtid>().unwrap_err();
        assert_eq!(e.column, 1);
        assert!(e.reason.contains("larger than"), "{e}");

        let e = "-1-1-1".parse::<Gtid>().unwrap_err();
        assert_eq!(e.column, 1);

        let e = "01-1-1".parse::<Gtid>().unwrap_err();
        assert!(e.reason.contains("leading zero"), "{e}");
    }

    #[test]
    fn position_parsing_rejects_repeated_domains_and_bad_separators() {
        assert_eq!(pos("1-2-50,0-1-100").to_string(), "0-1-100,1-2-50");
        assert_eq!(pos("0-1-100, 1-2-50").to_string(), "0-1-100,1-2-50");
        assert!(pos("").is_empty());
        let e = "0-1-1,0-2-2".parse::<GtidPosition>().unwrap_err();
        assert_eq!(e.column, 7);
        assert!(e.reason.contains("appears twice"));
        let e = "0-1-1;1-1-1".parse::<GtidPosition>().unwrap_err();
        assert_eq!(e.column, 6);
        let e = "0-1-1,".parse::<GtidPosition>().unwrap_err();
        assert_eq!(e.column, 7);
    }

    #[test]
    fn ahead_of_needs_every_domain_of_the_other() {
        assert!(pos("0-1-10,1-2-5").is_ahead_of(&pos("0-1-9")));
        assert!(!pos("0-1-10").is_ahead_of(&pos("0-1-9,1-2-5")));
        assert!(pos("0-1-10").is_ahead_of(&pos("0-7-10")));
        assert!(pos("").is_ahead_of(&pos("")));
        // The two-master shape (docs/background.md): server 4 at (A4,B3) is ahead of server 5 at (A3,B3), not the other way round.
        let s4 = pos("1-1-4,2-2-3");
        let s5 = pos("1-1-3,2-2-3");
        assert!(s4.is_ahead_of(&s5) && !s5.is_ahead_of(&s4));
    }

    #[test]
    fn difference_counts_per_domain_lead() {
        let d = pos("0-1-10,1-2-5,2-3-1").difference(&pos("0-1-4,1-2-7"));
        assert_eq!(d.into_iter().collect::<Vec<_>>(), vec![(0, 6), (2, 1)]);
    }

    #[test]
    fn binlog_state_keeps_one_entry_per_server_and_newest_per_domain() {
        let mut s = BinlogState::new();
        s.record(Gtid::new(0, 1, 5));
        s.record(Gtid::new(0, 2, 9));
        s.record(Gtid::new(1, 1, 3));
        assert_eq!(s.position().to_string(), "0-2-9,1-1-3");
        assert_eq!(s.to_string(), "0-1-5,0-2-9,1-1-3");
        assert!(s.contains(Gtid::new(0, 1, 5)));
        assert_eq!(BinlogState::from_gtids(s.gtids()), s);
    }

    fn arb_position() -> impl Strategy<Value = GtidPosition> {
        proptest::collection::btree_map(0u32..6, (0u32..4, 0u64..20), 0..6)
            .prop_map(|m| GtidPosition::from_gtids(m.into_iter().map(|(d, (s, n))| Gtid::new(d, s, n))))
    }

    proptest! {
        #[test]
        fn gtid_format_then_parse_is_identity(d: u32, s: u32, n: u64) {
            let g = Gtid::new(d, s, n);
            prop_assert_eq!(g.to_string().parse::<Gtid>().unwrap(), g);
        }

        #[test]
        fn position_format_then_parse_is_identity(p in arb_position()) {
            prop_assert_eq!(p.to_string().parse::<GtidPosition>().unwrap(), p);
        }

        #[test]
        fn parse_never_panics_and_accepts_only_what_it_formats(text in "[0-9,\\- ]{0,24}") {
            if let Ok(p) = text.parse::<GtidPosition>() {
                prop_assert_eq!(p.to_string().parse::<GtidPosition>().unwrap(), p);
            }
        }

        #[test]
        fn ahead_of_is_reflexive(a in arb_position()) {
            prop_assert!(a.is_ahead_of(&a));
        }

        #[test]
        fn ahead_of_is_antisymmetric_on_seq_nos(a in arb_position(), b in arb_position()) {
            if a.is_ahead_of(&b) && b.is_ahead_of(&a) {
                let seqs = |p: &GtidPosition| p.iter().map(|g| (g.domain, g.seq)).collect::<Vec<_>>();
                prop_assert_eq!(seqs(&a), seqs(&b));
            }
        }

        #[test]
        fn ahead_of_is_transitive(a in arb_position(), b in arb_position(), c in arb_position()) {
            if a.is_ahead_of(&b) && b.is_ahead_of(&c) {
                prop_assert!(a.is_ahead_of(&c));
            }
        }

        #[test]
        fn join_is_the_least_upper_bound(a in arb_position(), b in arb_position(), c in arb_position()) {
            let j = a.join(&b);
            prop_assert!(j.is_ahead_of(&a) && j.is_ahead_of(&b));
            if c.is_ahead_of(&a) && c.is_ahead_of(&b) {
                prop_assert!(c.is_ahead_of(&j));
            }
            // Least: nothing beyond the domains of a and b.
            prop_assert!(j.domains().all(|d| a.get(d).is_some() || b.get(d).is_some()));
        }

        #[test]
        fn difference_is_empty_exactly_when_the_other_has_caught_up(a in arb_position(), b in arb_position()) {
            let caught_up = a.iter().all(|g| g.seq <= b.get(g.domain).map_or(0, |x| x.seq));
            prop_assert_eq!(a.difference(&b).is_empty(), caught_up);
        }
    }
}

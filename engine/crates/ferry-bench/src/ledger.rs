//! The ledger of `ferry-bench commit --ledger`: what became of every attempt, so a test can check afterwards that no
//! acknowledged transaction was lost and none applied twice.
//!
//! Client `c` of `D` domains increments its own counter row, key `d<domain>c<c>` in domain `1 + c % D`, one
//! transaction at a time. Each attempt ends as exactly one [`Outcome`]:
//! - acknowledged: the node answered with its GTID; the row's counter counts it and the GTID is kept;
//! - refused: the node said READ_ONLY or SHUTTING_DOWN before taking the transaction in, so nothing was written;
//! - unknown: the connection broke while the transaction was in flight, so it may or may not have been written.
//!
//! Any other failure is not an outcome the ledger can account for ([`outcome`] hands it back as an error).

use std::collections::BTreeMap;

use ferry_client::{ClientError, Commit};
use ferry_core::gtid::Gtid;
use ferry_core::protocol::ErrorCode;
use serde_json::{json, Value};

/// The counter row client `client` increments, and its domain.
pub fn key_of(client: usize, domains: u32) -> (String, u32) {
    let domain = 1 + (client as u64 % u64::from(domains.max(1))) as u32;
    (format!("d{domain}c{client}"), domain)
}

/// What became of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Acked(Gtid),
    Refused,
    Unknown,
}

/// The outcome of a commit's result, or the error when it is none the ledger can account for (a refusal other than
/// read-only or shutting down, an answer the client did not understand).
pub fn outcome(result: Result<Commit, ClientError>) -> Result<Outcome, ClientError> {
    match result {
        Ok(commit) => Ok(Outcome::Acked(commit.gtid)),
        Err(ClientError::Io(_)) => Ok(Outcome::Unknown),
        Err(e) if matches!(e.code(), Some(ErrorCode::ReadOnly | ErrorCode::ShuttingDown)) => Ok(Outcome::Refused),
        Err(e) => Err(e),
    }
}

/// Every attempt's outcome, per row.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Acknowledged increments per row: each row's counter must end at least this high on every server.
    acked: BTreeMap<String, u64>,
    /// Attempts per row whose connection broke in flight: each may or may not have been applied.
    unknown: BTreeMap<String, u64>,
    /// Attempts refused before anything was written.
    refused: u64,
    /// The acknowledged transactions' GTIDs, in the order they were acknowledged.
    acked_gtids: Vec<Gtid>,
    /// The server the last acknowledged write went to (the master as the clients saw it).
    master: Option<String>,
    /// How many times acknowledged writes moved to another server (the first master counts as one).
    master_changes: u64,
}

impl Ledger {
    /// Records one attempt on `key` made to the server at `server`.
    pub fn record(&mut self, key: &str, server: &str, outcome: Outcome) {
        match outcome {
            Outcome::Acked(gtid) => {
                *self.acked.entry(key.to_string()).or_default() += 1;
                self.acked_gtids.push(gtid);
                if self.master.as_deref() != Some(server) {
                    self.master = Some(server.to_string());
                    self.master_changes += 1;
                }
            }
            Outcome::Refused => self.refused += 1,
            Outcome::Unknown => *self.unknown.entry(key.to_string()).or_default() += 1,
        }
        debug_assert_eq!(self.acked.values().sum::<u64>(), self.acked_gtids.len() as u64);
    }

    /// Acknowledged transactions in all.
    pub fn acked_total(&self) -> u64 {
        self.acked_gtids.len() as u64
    }

    /// The summary's ledger fields: `acked` and `unknown` per row, `refused`, `acked_gtids`, `master_changes`.
    pub fn summary(&self) -> serde_json::Map<String, Value> {
        let gtids: Vec<String> = self.acked_gtids.iter().map(Gtid::to_string).collect();
        let summary = json!({
            "acked": self.acked,
            "unknown": self.unknown,
            "refused": self.refused,
            "acked_gtids": gtids,
            "master_changes": self.master_changes,
        });
        match summary {
            Value::Object(fields) => fields,
            _ => unreachable!("json! of an object literal"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gtid(domain: u32, server: u32, seq: u64) -> Gtid {
        Gtid { domain, server, seq }
    }

    fn committed(g: Gtid) -> Result<Commit, ClientError> {
        Ok(Commit { gtid: g, commit_id: 1, commit_ts_us: 1 })
    }

    fn refusal(code: ErrorCode) -> Result<Commit, ClientError> {
        Err(ClientError::Server { code: Some(code), raw_code: code as u16, message: "no".into() })
    }

    #[test]
    fn each_client_has_its_own_row_in_its_domain() {
        assert_eq!(key_of(0, 4), ("d1c0".to_string(), 1));
        assert_eq!(key_of(3, 4), ("d4c3".to_string(), 4));
        assert_eq!(key_of(5, 4), ("d2c5".to_string(), 2));
        assert_eq!(key_of(7, 1), ("d1c7".to_string(), 1));
        assert_eq!(key_of(2, 0), ("d1c2".to_string(), 1), "no domains at all means domain 1");
    }

    #[test]
    fn results_map_to_outcomes() {
        let g = gtid(1, 1, 5);
        assert_eq!(outcome(committed(g)).unwrap(), Outcome::Acked(g));
        assert_eq!(outcome(refusal(ErrorCode::ReadOnly)).unwrap(), Outcome::Refused);
        assert_eq!(outcome(refusal(ErrorCode::ShuttingDown)).unwrap(), Outcome::Refused);
        let lost = Err(ClientError::Io(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)));
        assert_eq!(outcome(lost).unwrap(), Outcome::Unknown);
    }

    #[test]
    fn other_failures_are_not_outcomes() {
        assert!(outcome(refusal(ErrorCode::Timeout)).is_err());
        assert!(outcome(Err(ClientError::Protocol("garbled".into()))).is_err());
    }

    #[test]
    fn the_summary_counts_every_attempt_by_row() {
        let mut ledger = Ledger::default();
        ledger.record("d1c0", "a:1", Outcome::Acked(gtid(1, 1, 1)));
        ledger.record("d2c1", "a:1", Outcome::Acked(gtid(2, 1, 1)));
        ledger.record("d1c0", "a:1", Outcome::Unknown);
        ledger.record("d1c0", "a:1", Outcome::Refused);
        ledger.record("d2c1", "b:2", Outcome::Refused);
        ledger.record("d1c0", "b:2", Outcome::Acked(gtid(1, 2, 2)));
        assert_eq!(ledger.acked_total(), 3);
        let summary = Value::Object(ledger.summary());
        assert_eq!(
            summary,
            json!({
                "acked": {"d1c0": 2, "d2c1": 1},
                "unknown": {"d1c0": 1},
                "refused": 2,
                "acked_gtids": ["1-1-1", "2-1-1", "1-2-2"],
                "master_changes": 2,
            })
        );
    }

    #[test]
    fn a_master_change_counts_once_however_many_writes_follow() {
        let mut ledger = Ledger::default();
        for (seq, server) in [(1, "a:1"), (2, "a:1"), (3, "b:2"), (4, "b:2"), (5, "a:1")] {
            ledger.record("d1c0", server, Outcome::Acked(gtid(1, 1, seq)));
        }
        assert_eq!(ledger.summary()["master_changes"], 3);
    }

    #[test]
    fn an_empty_ledger_has_every_field() {
        let summary = Value::Object(Ledger::default().summary());
        assert_eq!(summary, json!({"acked": {}, "unknown": {}, "refused": 0, "acked_gtids": [], "master_changes": 0}));
    }
}

//! The master's list of change consumers (each subscription registers itself while it streams) with the
//! position each was sent and its lag, and the last ones cut off, for `GET /v1/consumers`. Consumers are kept
//! apart from replicas: they are never counted for semi-sync, never hold binlog files back from purges or
//! expiry, and are never taken for servers of the topology.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use ferry_core::gtid::{DomainId, Gtid, GtidPosition};
use parking_lot::Mutex;
use serde::Serialize;

/// Cut-off consumers remembered for the listing (the oldest is forgotten first).
pub const CUT_OFF_KEPT: usize = 16;

/// One subscription as the master sees it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ConsumerInfo {
    /// The name the consumer gave when it subscribed.
    pub name: String,
    /// Address it connected from.
    pub address: String,
    /// The domains it asked for; empty: every domain.
    pub domains: Vec<DomainId>,
    /// The position its stream started after.
    pub start_position: String,
    /// Newest GTID per domain written to its connection (where it resumes if it has read all of it).
    pub position: String,
    /// Master binlog coordinate of the last transaction written to its connection.
    pub sent_file: String,
    pub sent_offset: u64,
    pub connected_at_us: u64,
    pub transactions_sent: u64,
    pub bytes_sent: u64,
    /// Bytes of binlog read for this consumer and not yet written to its connection (at most about
    /// `--dump-buffer-bytes-max`), and the most it held at once.
    pub buffered_bytes: u64,
    pub buffered_bytes_peak: u64,
    /// Bytes of binlog the master wrote since this consumer's connection last took a frame while one waited for
    /// it; at `--consumer-stall-bytes-max` it is cut off. 0 while it keeps up.
    pub stalled_bytes: u64,
}

/// A consumer with its lag, as listed.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ConsumerView {
    #[serde(flatten)]
    pub info: ConsumerInfo,
    /// Per domain of the master's binlog (of its domains, when it asked for some): transactions behind (seq_no
    /// difference) and seconds behind (now minus the commit time of the last one sent; 0 when caught up).
    pub lag: BTreeMap<DomainId, ConsumerLag>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ConsumerLag {
    pub transactions: u64,
    pub seconds: f64,
}

/// A consumer the master cut off.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CutOff {
    pub name: String,
    pub address: String,
    /// The position it had been sent (it resumes from what it really received).
    pub position: String,
    pub at_us: u64,
    /// The most bytes its stream held in the master's memory at once.
    pub buffered_bytes_peak: u64,
    /// `CONSUMER_CUT_OFF`.
    pub code: &'static str,
    pub reason: String,
}

/// A live subscription's entry: what is listed, its position as a value, and the commit time of the last
/// transaction sent per domain (for the lag in seconds).
struct Entry {
    info: ConsumerInfo,
    position: GtidPosition,
    sent_commit_ts_us: BTreeMap<DomainId, u64>,
}

#[derive(Default)]
pub struct ConsumerRegistry {
    next_id: AtomicU64,
    consumers: Mutex<BTreeMap<u64, Entry>>,
    cut_off: Mutex<VecDeque<CutOff>>,
    cut_off_total: AtomicU64,
}

/// Keeps a consumer listed while its subscription streams.
pub struct Registration<'a> {
    registry: &'a ConsumerRegistry,
    id: u64,
}

impl ConsumerRegistry {
    /// Registers a subscription, unless `max` are streaming already (then `None`).
    pub fn register(&self, info: ConsumerInfo, start: GtidPosition, max: usize) -> Option<Registration<'_>> {
        let mut consumers = self.consumers.lock();
        if consumers.len() >= max {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        consumers.insert(id, Entry { info, position: start, sent_commit_ts_us: BTreeMap::new() });
        Some(Registration { registry: self, id })
    }

    /// Consumers streaming now, each with its lag behind `master` (the node's binlog position) at `now_us`.
    pub fn list(&self, master: &GtidPosition, now_us: u64) -> Vec<ConsumerView> {
        self.consumers
            .lock()
            .values()
            .map(|e| {
                let lag = master
                    .iter()
                    .filter(|m| e.info.domains.is_empty() || e.info.domains.contains(&m.domain))
                    .map(|m| {
                        let transactions = m.seq.saturating_sub(e.position.get(m.domain).map_or(0, |g| g.seq));
                        let seconds = match (transactions, e.sent_commit_ts_us.get(&m.domain)) {
                            (0, _) => 0.0,
                            (_, Some(ts)) => now_us.saturating_sub(*ts) as f64 / 1e6,
                            (_, None) => now_us.saturating_sub(e.info.connected_at_us) as f64 / 1e6,
                        };
                        (m.domain, ConsumerLag { transactions, seconds })
                    })
                    .collect();
                ConsumerView { info: e.info.clone(), lag }
            })
            .collect()
    }

    /// How many stream now.
    pub fn len(&self) -> usize {
        self.consumers.lock().len()
    }

    /// The last consumers cut off, oldest first.
    pub fn cut_off(&self) -> Vec<CutOff> {
        self.cut_off.lock().iter().cloned().collect()
    }

    /// Consumers cut off since the node started.
    pub fn cut_off_total(&self) -> u64 {
        self.cut_off_total.load(Ordering::Relaxed)
    }
}

impl Registration<'_> {
    fn update(&self, f: impl FnOnce(&mut Entry)) {
        if let Some(entry) = self.registry.consumers.lock().get_mut(&self.id) {
            f(entry);
        }
    }

    /// A batch of `bytes` was read for the consumer (what it held before is sent).
    pub fn buffered(&self, bytes: u64) {
        self.update(|e| {
            e.info.buffered_bytes = bytes;
            e.info.buffered_bytes_peak = e.info.buffered_bytes_peak.max(bytes);
        });
    }

    /// A transaction of `bytes` was written to the consumer's connection.
    pub fn sent(&self, gtid: Gtid, commit_ts_us: u64, file: &str, offset: u64, bytes: u64) {
        self.update(|e| {
            e.position.set(gtid);
            e.sent_commit_ts_us.insert(gtid.domain, commit_ts_us);
            e.info.position = e.position.to_string();
            e.info.sent_file = file.to_string();
            e.info.sent_offset = offset;
            e.info.transactions_sent += 1;
            e.info.bytes_sent += bytes;
            e.info.buffered_bytes = e.info.buffered_bytes.saturating_sub(bytes);
        });
    }

    /// Transactions read for the consumer were passed over (not of its domains).
    pub fn passed_over(&self, bytes: u64) {
        self.update(|e| e.info.buffered_bytes = e.info.buffered_bytes.saturating_sub(bytes));
    }

    /// The position written to the consumer's connection so far.
    pub fn position(&self) -> String {
        self.registry.consumers.lock().get(&self.id).map(|e| e.info.position.clone()).unwrap_or_default()
    }

    /// How many bytes of binlog went by while the connection took nothing.
    pub fn stalled(&self, bytes: u64) {
        self.update(|e| e.info.stalled_bytes = bytes);
    }

    /// The consumer is cut off: remembered (with `reason`) once its entry goes.
    pub fn cut_off(&self, reason: String) {
        let Some(entry) = self.registry.consumers.lock().get(&self.id).map(|e| e.info.clone()) else { return };
        let mut kept = self.registry.cut_off.lock();
        if kept.len() == CUT_OFF_KEPT {
            kept.pop_front();
        }
        kept.push_back(CutOff {
            name: entry.name,
            address: entry.address,
            position: entry.position,
            at_us: ferry_core::binlog::writer::now_us(),
            buffered_bytes_peak: entry.buffered_bytes_peak,
            code: ferry_core::protocol::ErrorCode::ConsumerCutOff.name(),
            reason,
        });
        self.registry.cut_off_total.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.registry.consumers.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, domains: Vec<DomainId>) -> ConsumerInfo {
        ConsumerInfo {
            name: name.into(),
            address: "127.0.0.1:5000".into(),
            domains,
            start_position: String::new(),
            position: String::new(),
            sent_file: String::new(),
            sent_offset: 0,
            connected_at_us: 1_000_000,
            transactions_sent: 0,
            bytes_sent: 0,
            buffered_bytes: 0,
            buffered_bytes_peak: 0,
            stalled_bytes: 0,
        }
    }

    #[test]
    fn a_consumer_is_listed_with_its_position_and_lag_while_it_streams_and_bounded_in_number() {
        let registry = ConsumerRegistry::default();
        let a = registry.register(info("a", vec![1]), "1-1-2".parse().unwrap(), 2).unwrap();
        let b = registry.register(info("b", vec![]), GtidPosition::new(), 2).unwrap();
        assert!(registry.register(info("c", vec![]), GtidPosition::new(), 2).is_none(), "two at most");
        a.sent(Gtid::new(1, 1, 3), 2_000_000, "ferry-bin.000001", 300, 100);
        let master: GtidPosition = "0-1-9,1-1-5".parse().unwrap();
        let list = registry.list(&master, 4_500_000);
        let a_view = list.iter().find(|v| v.info.name == "a").unwrap();
        assert_eq!(a_view.info.position, "1-1-3");
        assert_eq!(a_view.lag.keys().copied().collect::<Vec<_>>(), [1], "only its domains");
        assert_eq!(a_view.lag[&1], ConsumerLag { transactions: 2, seconds: 2.5 });
        let b_view = list.iter().find(|v| v.info.name == "b").unwrap();
        assert_eq!(b_view.lag[&0], ConsumerLag { transactions: 9, seconds: 3.5 }, "nothing sent: since it connected");
        drop(b);
        assert_eq!(registry.len(), 1);
        a.sent(Gtid::new(1, 1, 5), 4_000_000, "ferry-bin.000001", 500, 100);
        assert_eq!(registry.list(&master, 9_000_000)[0].lag[&1], ConsumerLag { transactions: 0, seconds: 0.0 });
    }

    #[test]
    fn a_cut_off_consumer_is_remembered_with_its_reason_and_the_oldest_forgotten() {
        let registry = ConsumerRegistry::default();
        for i in 0..CUT_OFF_KEPT + 2 {
            let r = registry.register(info(&format!("c{i}"), vec![]), GtidPosition::new(), 1).unwrap();
            r.cut_off(format!("reason {i}"));
        }
        let kept = registry.cut_off();
        assert_eq!(kept.len(), CUT_OFF_KEPT);
        assert_eq!(kept[0].name, "c2");
        assert_eq!(kept.last().unwrap().reason, format!("reason {}", CUT_OFF_KEPT + 1));
        assert_eq!(kept[0].code, "CONSUMER_CUT_OFF");
        assert_eq!(registry.cut_off_total(), CUT_OFF_KEPT as u64 + 2);
        assert_eq!(registry.len(), 0);
    }
}

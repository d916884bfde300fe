//! Prometheus metrics of a node: commit pipeline counters and histograms (fed by every committed group) and
//! gauges sampled at scrape time (read-only flag, commits in flight, binlog files, position per domain, and each
//! memory or space bound of replication with what it holds now and at most, and this node's clone).

use std::sync::Mutex;

use ferry_core::commit::GroupReport;
use ferry_core::node::{CommitObserver, Node};

use crate::consumers::ConsumerRegistry;
use crate::expiry::ExpiryStatus;
use crate::replicas::ReplicaRegistry;
use crate::replication::ConnectionView;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

type DomainLabels = Vec<(String, String)>;

pub struct Metrics {
    registry: Mutex<Registry>,
    commits: Counter,
    groups: Counter,
    fsyncs: Counter,
    bytes_written: Counter,
    group_size: Histogram,
    fsync_seconds: Histogram,
    read_only: Gauge,
    storage_failed: Gauge,
    commits_in_flight: Gauge,
    binlog_files: Gauge,
    event_bytes_max: Gauge,
    refused_event_too_large: Gauge,
    binlog_seq: Family<DomainLabels, Gauge>,
    semi_sync_on: Gauge,
    semi_sync_timeouts: Gauge,
    semi_sync_waits: Gauge,
    semi_sync_after_sync: Gauge,
    replication_running: Family<DomainLabels, Gauge>,
    replication_lag_transactions: Family<DomainLabels, Gauge>,
    replication_lag_seconds: Family<DomainLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    replication_applied: Family<DomainLabels, Gauge>,
    replication_conflicts: Family<DomainLabels, Gauge>,
    replication_error: Family<DomainLabels, Gauge>,
    dump_buffer_bytes_max: Gauge,
    dump_buffer_bytes: Gauge,
    dump_buffer_bytes_peak: Gauge,
    read_ahead_bytes_max: Gauge,
    relay_log_space_bytes_max: Gauge,
    replication_read_ahead_bytes: Family<DomainLabels, Gauge>,
    replication_read_ahead_bytes_peak: Family<DomainLabels, Gauge>,
    replication_relay_log_space_bytes: Family<DomainLabels, Gauge>,
    replication_relay_log_space_bytes_peak: Family<DomainLabels, Gauge>,
    replication_waiting_for_relay_space: Family<DomainLabels, Gauge>,
    binlog_expiry_held_back: Gauge,
    binlog_files_expired: Gauge,
    clone_copying: Gauge,
    clone_incomplete: Gauge,
    clone_bytes_done: Gauge,
    clone_bytes_total: Gauge,
    consumers: Gauge,
    consumers_cut_off: Gauge,
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("ferry");
        let commits = Counter::default();
        let groups = Counter::default();
        let fsyncs = Counter::default();
        let bytes_written = Counter::default();
        let group_size = Histogram::new(exponential_buckets(1.0, 2.0, 10));
        let fsync_seconds = Histogram::new(exponential_buckets(0.000_025, 2.0, 14));
        let read_only = Gauge::default();
        let storage_failed = Gauge::default();
        let commits_in_flight = Gauge::default();
        let binlog_files = Gauge::default();
        let event_bytes_max = Gauge::default();
        let refused_event_too_large = Gauge::default();
        let binlog_seq = Family::<DomainLabels, Gauge>::default();
        let semi_sync_on = Gauge::default();
        let semi_sync_timeouts = Gauge::default();
        let semi_sync_waits = Gauge::default();
        let replication_running = Family::<DomainLabels, Gauge>::default();
        let replication_lag_transactions = Family::<DomainLabels, Gauge>::default();
        let replication_lag_seconds = Family::<DomainLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        let replication_applied = Family::<DomainLabels, Gauge>::default();
        let replication_conflicts = Family::<DomainLabels, Gauge>::default();
        let replication_error = Family::<DomainLabels, Gauge>::default();
        let dump_buffer_bytes_max = Gauge::default();
        let dump_buffer_bytes = Gauge::default();
        let dump_buffer_bytes_peak = Gauge::default();
        let read_ahead_bytes_max = Gauge::default();
        let relay_log_space_bytes_max = Gauge::default();
        let replication_read_ahead_bytes = Family::<DomainLabels, Gauge>::default();
        let replication_read_ahead_bytes_peak = Family::<DomainLabels, Gauge>::default();
        let replication_relay_log_space_bytes = Family::<DomainLabels, Gauge>::default();
        let replication_relay_log_space_bytes_peak = Family::<DomainLabels, Gauge>::default();
        let replication_waiting_for_relay_space = Family::<DomainLabels, Gauge>::default();
        registry.register("commits", "Transactions committed", commits.clone());
        registry.register("commit_groups", "Commit groups written (one binlog write each)", groups.clone());
        registry.register("binlog_fsyncs", "fsyncs of the binlog by group commit", fsyncs.clone());
        registry.register("binlog_bytes_written", "Bytes of transactions written to the binlog", bytes_written.clone());
        registry.register("commit_group_size", "Transactions per commit group", group_size.clone());
        registry.register("binlog_fsync_seconds", "Latency of one group's binlog fsync", fsync_seconds.clone());
        registry.register("read_only", "1 when the node refuses client writes", read_only.clone());
        registry.register(
            "storage_failed",
            "1 after a failed binlog write or fsync, store flush, relay or replica-state write: the node is \
             read-only and acknowledges nothing until restarted (the error is the status's `failed`)",
            storage_failed.clone(),
        );
        registry.register(
            "commits_in_flight",
            "Client transactions admitted past the read-only check and not answered yet",
            commits_in_flight.clone(),
        );
        registry.register("binlog_files", "Binlog files listed in the index", binlog_files.clone());
        registry.register(
            "event_bytes_max",
            "Largest row event a client transaction may produce (--event-bytes-max)",
            event_bytes_max.clone(),
        );
        registry.register(
            "txns_refused_event_too_large",
            "Client transactions refused because their row event was over --event-bytes-max",
            refused_event_too_large.clone(),
        );
        registry.register("gtid_binlog_seq", "seq_no of the newest GTID in the binlog, per domain", binlog_seq.clone());
        registry.register(
            "semi_sync_on",
            "1 while commits wait for replicas' confirmations, 0 when fallen back",
            semi_sync_on.clone(),
        );
        registry.register(
            "semi_sync_timeouts",
            "Semi-sync waits that timed out (fallbacks to asynchronous)",
            semi_sync_timeouts.clone(),
        );
        registry.register(
            "semi_sync_waits",
            "Commit groups that waited for replicas' confirmations",
            semi_sync_waits.clone(),
        );
        let semi_sync_after_sync = Gauge::default();
        registry.register(
            "semi_sync_after_sync",
            "1 when semi-sync waits at after_sync (before the group is visible), 0 at after_commit",
            semi_sync_after_sync.clone(),
        );
        registry.register("replication_running", "1 while a replication connection runs", replication_running.clone());
        registry.register(
            "replication_lag_transactions",
            "Transactions a connection's applied position is behind, per domain",
            replication_lag_transactions.clone(),
        );
        registry.register(
            "replication_lag_seconds",
            "Seconds a connection is behind, per domain (0 when caught up)",
            replication_lag_seconds.clone(),
        );
        registry.register(
            "replication_applied_transactions",
            "Transactions applied by a connection since it started",
            replication_applied.clone(),
        );
        registry.register(
            "replication_conflicts",
            "Parallel-apply conflicts of a connection since it started",
            replication_conflicts.clone(),
        );
        registry.register("replication_error", "1 when a connection stopped on an error", replication_error.clone());
        registry.register(
            "dump_buffer_bytes_max",
            "Bytes of binlog a replica's stream may hold in memory (--dump-buffer-bytes-max)",
            dump_buffer_bytes_max.clone(),
        );
        registry.register(
            "dump_buffer_bytes",
            "Bytes of binlog read for the connected replicas and not yet written to their sockets, all together",
            dump_buffer_bytes.clone(),
        );
        registry.register(
            "dump_buffer_bytes_peak",
            "The most bytes one replica's stream held at once since the node started",
            dump_buffer_bytes_peak.clone(),
        );
        registry.register(
            "read_ahead_bytes_max",
            "Bytes of relay log a connection's SQL side may read ahead of what it applied (--read-ahead-bytes-max)",
            read_ahead_bytes_max.clone(),
        );
        registry.register(
            "relay_log_space_bytes_max",
            "Space a connection's relay log files may take (--relay-log-space-bytes-max)",
            relay_log_space_bytes_max.clone(),
        );
        registry.register(
            "replication_read_ahead_bytes",
            "Bytes a connection's SQL side has read ahead of what it applied",
            replication_read_ahead_bytes.clone(),
        );
        registry.register(
            "replication_read_ahead_bytes_peak",
            "The most bytes a connection's SQL side held read ahead at once since it started",
            replication_read_ahead_bytes_peak.clone(),
        );
        registry.register(
            "replication_relay_log_space_bytes",
            "Bytes a connection's relay log files take on disk",
            replication_relay_log_space_bytes.clone(),
        );
        registry.register(
            "replication_relay_log_space_bytes_peak",
            "The most bytes a connection's relay log files took at once since it started",
            replication_relay_log_space_bytes_peak.clone(),
        );
        registry.register(
            "replication_waiting_for_relay_space",
            "1 while a connection's IO side waits for the SQL side to free relay log space",
            replication_waiting_for_relay_space.clone(),
        );
        let binlog_expiry_held_back = Gauge::default();
        registry.register(
            "binlog_expiry_held_back",
            "1 while binlog expiry keeps a due file because a connected replica still reads it",
            binlog_expiry_held_back.clone(),
        );
        let binlog_files_expired = Gauge::default();
        registry.register(
            "binlog_files_expired",
            "Binlog files deleted by expiry since the node started",
            binlog_files_expired.clone(),
        );
        let clone_copying = Gauge::default();
        registry.register(
            "clone_copying",
            "1 while this node copies a donor's snapshot (a clone)",
            clone_copying.clone(),
        );
        let clone_incomplete = Gauge::default();
        registry.register(
            "clone_incomplete",
            "1 while a clone of this node is unfinished (copying, failed or cancelled): its data is incomplete",
            clone_incomplete.clone(),
        );
        let clone_bytes_done = Gauge::default();
        registry.register(
            "clone_bytes_done",
            "Bytes of the clone's snapshot copied and verified",
            clone_bytes_done.clone(),
        );
        let clone_bytes_total = Gauge::default();
        registry.register(
            "clone_bytes_total",
            "Bytes of the clone's snapshot, as its donor announced them (0 until known)",
            clone_bytes_total.clone(),
        );
        let consumers = Gauge::default();
        registry.register("consumers", "Change consumers streaming from this node", consumers.clone());
        let consumers_cut_off = Gauge::default();
        registry.register(
            "consumers_cut_off",
            "Change consumers cut off since the node started (their connection took nothing for too long)",
            consumers_cut_off.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            commits,
            groups,
            fsyncs,
            bytes_written,
            group_size,
            fsync_seconds,
            read_only,
            storage_failed,
            commits_in_flight,
            binlog_files,
            event_bytes_max,
            refused_event_too_large,
            binlog_seq,
            semi_sync_on,
            semi_sync_timeouts,
            semi_sync_waits,
            semi_sync_after_sync,
            replication_running,
            replication_lag_transactions,
            replication_lag_seconds,
            replication_applied,
            replication_conflicts,
            replication_error,
            dump_buffer_bytes_max,
            dump_buffer_bytes,
            dump_buffer_bytes_peak,
            read_ahead_bytes_max,
            relay_log_space_bytes_max,
            replication_read_ahead_bytes,
            replication_read_ahead_bytes_peak,
            replication_relay_log_space_bytes,
            replication_relay_log_space_bytes_peak,
            replication_waiting_for_relay_space,
            binlog_expiry_held_back,
            binlog_files_expired,
            clone_copying,
            clone_incomplete,
            clone_bytes_done,
            clone_bytes_total,
            consumers,
            consumers_cut_off,
        }
    }

    /// Samples the node's gauges and renders everything in the Prometheus text format.
    pub fn render(
        &self,
        node: &Node,
        connections: &[ConnectionView],
        replicas: &ReplicaRegistry,
        consumers: &ConsumerRegistry,
        expiry: &ExpiryStatus,
        clone: &crate::clone::Cloning,
    ) -> String {
        let status = node.status();
        let view = clone.view();
        self.clone_copying.set(i64::from(view.state == crate::clone::CloneState::Copying));
        self.clone_incomplete.set(i64::from(clone.incomplete().is_some()));
        self.clone_bytes_done.set(view.bytes_done as i64);
        self.clone_bytes_total.set(view.bytes_total.unwrap_or(0) as i64);
        self.consumers.set(consumers.len() as i64);
        self.consumers_cut_off.set(consumers.cut_off_total() as i64);
        self.binlog_expiry_held_back.set(i64::from(expiry.held_back.is_some()));
        self.binlog_files_expired.set(expiry.files_expired as i64);
        if let Some(semi) = &status.semi_sync {
            self.semi_sync_on.set(i64::from(semi.state == "on"));
            self.semi_sync_timeouts.set(semi.timeouts as i64);
            self.semi_sync_waits.set(semi.waits as i64);
            let after_sync = semi.wait_point == ferry_core::semisync::WaitPoint::AfterSync;
            self.semi_sync_after_sync.set(i64::from(after_sync));
        }
        for c in connections {
            let conn = vec![("connection".to_string(), c.name.clone())];
            self.replication_running.get_or_create(&conn).set(i64::from(c.running));
            self.replication_applied.get_or_create(&conn).set(c.transactions_applied as i64);
            self.replication_conflicts.get_or_create(&conn).set(c.conflicts as i64);
            self.replication_error.get_or_create(&conn).set(i64::from(c.last_error.is_some()));
            self.replication_read_ahead_bytes.get_or_create(&conn).set(c.read_ahead_bytes as i64);
            self.replication_read_ahead_bytes_peak.get_or_create(&conn).set(c.read_ahead_bytes_peak as i64);
            self.replication_relay_log_space_bytes.get_or_create(&conn).set(c.relay_log_space_bytes as i64);
            self.replication_relay_log_space_bytes_peak.get_or_create(&conn).set(c.relay_log_space_bytes_peak as i64);
            let waiting = i64::from(c.waiting_for_relay_space);
            self.replication_waiting_for_relay_space.get_or_create(&conn).set(waiting);
            for (domain, lag) in &c.lag {
                let labels =
                    vec![("connection".to_string(), c.name.clone()), ("domain".to_string(), domain.to_string())];
                self.replication_lag_transactions.get_or_create(&labels).set(lag.transactions as i64);
                self.replication_lag_seconds.get_or_create(&labels).set(lag.seconds);
            }
        }
        self.read_only.set(i64::from(status.read_only));
        self.storage_failed.set(i64::from(status.failed.is_some()));
        self.commits_in_flight.set(status.commits_in_flight as i64);
        self.binlog_files.set(status.binlog_files.len() as i64);
        self.event_bytes_max.set(status.event_bytes_max as i64);
        self.refused_event_too_large.set(status.counters.refused_event_too_large as i64);
        self.dump_buffer_bytes_max.set(status.dump_buffer_bytes_max as i64);
        self.dump_buffer_bytes.set(replicas.buffered_bytes() as i64);
        self.dump_buffer_bytes_peak.set(replicas.buffered_bytes_peak() as i64);
        self.read_ahead_bytes_max.set(status.read_ahead_bytes_max as i64);
        self.relay_log_space_bytes_max.set(status.relay_log_space_bytes_max as i64);
        for gtid in node.position().iter() {
            self.binlog_seq.get_or_create(&vec![("domain".to_string(), gtid.domain.to_string())]).set(gtid.seq as i64);
        }
        let mut out = String::new();
        encode(&mut out, &self.registry.lock().expect("metrics registry lock"))
            .expect("writing to a String cannot fail");
        out
    }
}

impl CommitObserver for Metrics {
    fn group_committed(&self, report: &GroupReport) {
        self.commits.inc_by(report.txns.len() as u64);
        self.groups.inc();
        self.bytes_written.inc_by(report.bytes);
        self.group_size.observe(report.txns.len() as f64);
        if let Some(took) = report.fsync {
            self.fsyncs.inc();
            self.fsync_seconds.observe(took.as_secs_f64());
        }
    }
}

//! Rewind: the node goes back to a GTID position — per domain, the last transaction another server also has —
//! cutting the transactions after it from its binlog and putting its store back as it was there, after
//! archiving them. For an old master whose acknowledged transactions never reached the server that replaced it.
//!
//! Done on the running node with the binlog lock held (no commit can slip in), on a quiesced node only: the
//! caller refuses while replication runs or replicas and consumers stream from it; this module refuses a
//! writable node, commits in flight, a failed node, and every case [`RewindRefusal`] names. The store is put back
//! from the cut transactions' before images, newest first; when one was logged without them, by replaying the
//! kept binlog into the store emptied — only where the binlog holds the store's whole history (it starts at file
//! 1 with an empty GTID list, and the store records that it was filled from it), else refused saying why.
//!
//! Crash-safe: the archive, then the intent (both fsynced), then the archive's name, then the store's part (one durable redb commit that
//! names the archive), then the binlog's truncation, then the intent goes. A start finding the intent completes
//! the rewind (see [`complete_at_open`]); a failure after the intent is fail-stop, and the restart completes it.

use std::collections::{HashSet, VecDeque};
use std::path::Path;

use parking_lot::Mutex;
use serde::Serialize;

use super::{Node, NodeConfig, NodeError};
use crate::binlog::rewind::{self, CutTransaction, RewindIntent, RewindRefusal};
use crate::binlog::writer::BinlogWriter;
use crate::binlog::{hwm, BinlogCoord, BinlogError};
use crate::gtid::{Gtid, GtidPosition};
use crate::store::Store;

/// What a rewind did (or, dry, would do).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Serialize)]
pub struct RewindOutcome {
    /// The position asked for.
    pub to: String,
    pub dry_run: bool,
    /// The transactions cut (to be cut, with a dry run), in binlog order.
    pub cut: Vec<CutTransaction>,
    /// Where the binlog ends after the rewind (None when nothing is cut).
    pub cut_at: Option<BinlogCoord>,
    /// The archive of the cut transactions, in the data directory's `rewind-archives` (None with a dry run or
    /// when nothing is cut).
    pub archive: Option<String>,
    /// gtid_binlog_state and gtid_slave_pos after the rewind (as they are, with a dry run).
    pub gtid_binlog_state: String,
    pub gtid_slave_pos: String,
    /// True when the store is (would be) put back by replaying the kept binlog into it emptied, because a cut
    /// transaction has no before images; false when from the cut transactions' before images.
    pub by_replay: bool,
}

/// Why a rewind did nothing.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error(transparent)]
    Refused(#[from] RewindRefusal),
    /// The node is not quiesced (writable, commits in flight) or has failed.
    #[error("{0}")]
    NotQuiesced(String),
    #[error(transparent)]
    Node(#[from] NodeError),
}

impl From<BinlogError> for RewindError {
    fn from(e: BinlogError) -> Self {
        RewindError::Node(e.into())
    }
}

impl Node {
    /// Rewinds the node to `to` (see the module's documentation); with `dry_run`, only says what would be cut.
    /// `quiesced` is asked again with the binlog lock held (no commit, no new dump stream's start can slip in):
    /// the server's own reasons to refuse (replication running, replicas or consumers streaming), if any.
    pub fn rewind(
        &self,
        to: &GtidPosition,
        dry_run: bool,
        quiesced: &dyn Fn() -> Option<String>,
    ) -> Result<RewindOutcome, RewindError> {
        if let Some(why) = self.health.failure() {
            return Err(RewindError::NotQuiesced(format!("the node's storage failed ({why}): restart it first")));
        }
        if !self.is_read_only() {
            return Err(RewindError::NotQuiesced(
                "the node takes client writes: make it read-only before a rewind".into(),
            ));
        }
        let durability = self.config.commit.durability;
        let outcome = self.commit.with_log(|log| -> Result<RewindOutcome, RewindError> {
            if let Some(why) = quiesced() {
                return Err(RewindError::NotQuiesced(why));
            }
            let in_flight = self.commits_in_flight();
            if in_flight > 0 {
                return Err(RewindError::NotQuiesced(format!(
                    "{in_flight} client commit(s) admitted before read-only went on have no answer yet: wait for \
                     them before a rewind"
                )));
            }
            let fs = log.binlog.fs().clone();
            let dir = log.binlog.dir().to_path_buf();
            let plan = rewind::plan(&*fs, &dir, log.binlog.file_names(), log.binlog.coord(), to)??;
            let slave_pos = slave_pos_after(&self.slave_position(), to, &plan.gtids());
            let mut outcome = RewindOutcome {
                to: to.to_string(),
                dry_run,
                cut: plan.listed(),
                cut_at: plan.cut_at,
                archive: None,
                gtid_binlog_state: log.binlog.state().to_string(),
                gtid_slave_pos: self.slave_position().to_string(),
                by_replay: false,
            };
            let Some(cut_at) = plan.cut_at else {
                return Ok(outcome);
            };
            let replay = match plan.without_before_images() {
                None => false,
                Some(gtid) => match self.why_not_replay(&plan)? {
                    None => true,
                    Some(why_not_replay) => return Err(RewindRefusal::NoBeforeImages { gtid, why_not_replay }.into()),
                },
            };
            outcome.by_replay = replay;
            if dry_run {
                outcome.gtid_binlog_state = plan.state_at_cut.to_string();
                outcome.gtid_slave_pos = slave_pos.to_string();
                return Ok(outcome);
            }
            log.checkpoint(durability).map_err(NodeError::from)?;
            let archive = rewind::archive_name(cut_at);
            let data_dir = &self.config.data_dir;
            rewind::write_archive(&*fs, data_dir, &dir, &archive, self.config.server_id, &plan)?;
            let intent = RewindIntent {
                archive: archive.clone(),
                to: to.to_string(),
                cut_at,
                slave_pos: slave_pos.to_string(),
                drop_if_empty: plan.cut_only_tables(),
                replay,
            };
            rewind::write_intent(&*fs, &dir, &intent)?;
            // From here a failure leaves the intent: the node stops acknowledging, and its restart completes it.
            let done = finish(&self.config, &self.store, &intent, Some(&plan.gtids())).and_then(|()| {
                let (binlog, _) = BinlogWriter::open_keeping_on(
                    fs.clone(),
                    &dir,
                    self.config.server_id,
                    self.config.binlog_file_bytes_max,
                    Some(cut_at),
                    !durability.fsyncs(),
                )?;
                Ok(binlog)
            });
            let binlog = match done {
                Ok(binlog) => binlog,
                Err(e) => {
                    let why = self.health.fail(format!("rewind: {e}"));
                    return Err(RewindError::Node(NodeError::Recovery(why)));
                }
            };
            log.binlog = binlog;
            log.durable_through = Some(cut_at);
            let position = log.binlog.state().position().clone();
            debug_assert_eq!(log.binlog.coord(), cut_at, "the binlog ends at the cut");
            *self.slave_pos.lock() = slave_pos.clone();
            *self.watch.position.lock() = position.clone();
            *self.watch.end.lock() = log.binlog.coord();
            let cut: HashSet<String> = outcome.cut.iter().map(|t| t.gtid.clone()).collect();
            self.recent.lock().retain(|e| !cut.contains(&e.gtid));
            let own = self.config.server_id;
            let used = plan.gtids().into_iter().filter(|g| g.server == own).chain(slave_pos.iter());
            self.commit.rewind_counters(&position, used.collect::<Vec<_>>());
            outcome.archive = Some(archive);
            outcome.gtid_binlog_state = log.binlog.state().to_string();
            outcome.gtid_slave_pos = slave_pos.to_string();
            Ok(outcome)
        })?;
        if let Some(archive) = &outcome.archive {
            tracing::warn!(
                to = %outcome.to, cut = outcome.cut.len(), archive = %archive,
                "rewound: the cut transactions are archived, the binlog and the store are back at the position"
            );
        }
        self.watch.moved.notify_all();
        self.watch.moved_async.notify_waiters();
        Ok(outcome)
    }

    /// Why the store cannot be put back by replaying the kept binlog into it emptied (None: it can).
    fn why_not_replay(&self, plan: &rewind::RewindPlan) -> Result<Option<String>, NodeError> {
        if !plan.starts_whole {
            return Ok(Some(
                "this node's binlog does not start at its first transaction (files were purged, or RESET MASTER TO \
                 another number)"
                    .into(),
            ));
        }
        if !self.store.history_in_binlog()? {
            return Ok(Some(
                "the store holds history its binlog does not (a RESET MASTER kept the data and dropped the binlog, or \
                 the store predates the record of it)"
                    .into(),
            ));
        }
        Ok(None)
    }

    /// The archives of earlier rewinds, oldest first.
    pub fn rewind_archives(&self) -> Vec<String> {
        let dir = self.config.data_dir.join(rewind::ARCHIVE_DIR);
        let mut names: Vec<String> = self
            .config
            .fs
            .list_dir(&dir)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| rewind::is_archive_name(n))
            .collect();
        names.sort_by_key(|n| n.rsplit('-').next().and_then(|t| t.trim_end_matches(".bin").parse::<u64>().ok()));
        names
    }
}

/// gtid_slave_pos after a rewind to `to` cutting `cut`: a domain whose replicated GTID is cut goes back to the
/// position's GTID (or leaves gtid_slave_pos, when the position leaves the domain out).
fn slave_pos_after(slave_pos: &GtidPosition, to: &GtidPosition, cut: &[Gtid]) -> GtidPosition {
    let cut: HashSet<Gtid> = cut.iter().copied().collect();
    let mut after = slave_pos.clone();
    for g in slave_pos.iter().filter(|g| cut.contains(g)) {
        match to.get(g.domain) {
            Some(back) => after.set(back),
            None => {
                after.remove(g.domain);
            }
        }
    }
    after
}

/// Completes a rewind whose intent is written and whose store is through the binlog's end (or already put back):
/// the archive named, the cut's own seq_nos kept from reuse, the store put back from the archive (unless done), the binlog cut,
/// the intent cleared. Each step may be done again. `expected`: the GTIDs the archive must hold (checked).
fn finish(
    config: &NodeConfig,
    store: &Store,
    intent: &RewindIntent,
    expected: Option<&[Gtid]>,
) -> Result<(), NodeError> {
    let fs = &*config.fs;
    let dir = config.data_dir.join("binlog");
    let path = rewind::promote_archive(fs, &config.data_dir, &intent.archive)?;
    let (_, txns) = rewind::read_archive(fs, &path)?;
    let gtids: Vec<Gtid> = txns.iter().map(|t| t.gtid()).collect();
    if let Some(expected) = expected {
        if gtids != expected {
            return Err(NodeError::Recovery(format!(
                "the rewind archive {} reads back other transactions than were cut: refusing to go on",
                path.display()
            )));
        }
    }
    hwm::raise_on(fs, &dir, gtids.iter().copied().filter(|g| g.server == config.server_id))?;
    if store.rewound_by()?.as_deref() != Some(intent.archive.as_str()) {
        let slave_pos: GtidPosition = intent
            .slave_pos
            .parse()
            .map_err(|e| NodeError::Recovery(format!("the rewind intent's gtid_slave_pos does not parse: {e}")))?;
        if intent.replay {
            let mut kept = rewind::kept_changes(config.fs.clone(), &dir, intent.cut_at)?;
            store.rebuild(&mut kept, intent.cut_at, &slave_pos, &intent.archive)?;
        } else {
            let changes: Vec<_> = txns.into_iter().map(|t| t.changes).collect();
            let restores = rewind::restores(&changes);
            store.rewind(&restores, &intent.drop_if_empty, intent.cut_at, &slave_pos, &intent.archive)?;
        }
    }
    rewind::truncate(fs, &dir, intent.cut_at)?;
    rewind::clear_intent(fs, &dir)?;
    Ok(())
}

/// At open, before the binlog is: a rewind a crash interrupted is completed. When the store's part is not done,
/// the store is first brought to the binlog's end (replayed and checkpointed) — the state the rewind began from.
pub(super) fn complete_at_open(config: &NodeConfig, store: &Store, binlog_dir: &Path) -> Result<(), NodeError> {
    let Some(intent) = rewind::read_intent(&*config.fs, binlog_dir)? else {
        rewind::discard_partial_archives(&*config.fs, &config.data_dir)?;
        return Ok(());
    };
    tracing::warn!(to = %intent.to, archive = %intent.archive, "completing a rewind a crash interrupted");
    if store.rewound_by()?.as_deref() != Some(intent.archive.as_str()) {
        let applied = store.applied_through()?;
        let (binlog, _) = BinlogWriter::open_keeping_on(
            config.fs.clone(),
            binlog_dir,
            config.server_id,
            config.binlog_file_bytes_max,
            applied,
            !config.commit.durability.fsyncs(),
        )?;
        super::open::replay(&binlog, store, applied, &Mutex::new(VecDeque::new()))?;
        store.checkpoint()?;
    }
    finish(config, store, &intent, None)
}

#[cfg(test)]
#[path = "rewind_tests.rs"]
mod tests;

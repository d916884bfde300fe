//! The DBA's binlog commands: FLUSH LOGS, RESET MASTER, DELETE_DOMAIN_ID, PURGE and expiry (each guarded by
//! what recovery and connected replicas still need), SHOW BINLOG EVENTS.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{DeleteDomainError, Node, NodeError, PurgeError};
use crate::binlog::delete_domain::{check_deletion, DomainDeletion};
use crate::binlog::expiry::{self, reader_of, ExpiryPlan, ExpiryPolicy, FileFacts, ReaderNeed};
use crate::binlog::listing::{list_events, EventRow, ListingError, ListingRequest};
use crate::binlog::reader::read_gtid_list_on;
use crate::binlog::{file_name, file_seq, hwm, reset, BinlogError};
use crate::commit::{CommitError, CommitLog, Durability};
use crate::gtid::{BinlogState, DomainId, Gtid, GtidPosition};

impl Node {
    /// Closes the current binlog file and starts the next (FLUSH LOGS); returns the new file's name.
    pub fn flush_logs(&self) -> Result<String, NodeError> {
        let durability = self.config.commit.durability;
        self.commit.with_log(|log| {
            log.rotate(durability)?;
            Ok(file_name(log.binlog.coord().file_seq))
        })
    }

    /// RESET MASTER [TO first_seq]: deletes every binlog file and empties gtid_binlog_state; the binlog starts
    /// again with file `first_seq`. The store (the data) is untouched and gtid_slave_pos stays. The seq_no
    /// counters are kept unless `reuse_seq_nos` (MariaDB's behaviour, by the caller's explicit choice): kept, the
    /// next GTIDs continue above the old ones, and the high-water mark keeps them so across restarts too. The
    /// caller guards against replicas and client writes. Returns the files deleted.
    pub fn reset_master(&self, first_seq: u64, reuse_seq_nos: bool) -> Result<Vec<String>, NodeError> {
        let durability = self.config.commit.durability;
        let removed = self.commit.with_log(|log| -> Result<Vec<String>, NodeError> {
            log.checkpoint(durability)?;
            let dir = log.binlog.dir().to_path_buf();
            if reuse_seq_nos {
                hwm::write_on(&**log.binlog.fs(), &dir, &BTreeMap::new())?;
                log.reset_reservation();
            } else {
                hwm::raise_on(&**log.binlog.fs(), &dir, log.binlog.state().position().iter())?;
            }
            reset::write_intent(&**log.binlog.fs(), &dir, reset::ResetIntent { first_seq })?;
            // From here a failure leaves the intent: the node stops acknowledging, and its restart completes the
            // reset.
            let done = log
                .binlog
                .reset(first_seq)
                .map_err(NodeError::from)
                .and_then(|removed| Ok((removed, self.store.rebase(log.binlog.coord())?)))
                .and_then(|(removed, ())| Ok((removed, reset::clear_intent(&**log.binlog.fs(), &dir)?)));
            let removed = match done {
                Ok((removed, ())) => removed,
                Err(e) => {
                    let why = self.health.fail(format!("RESET MASTER: {e}"));
                    return Err(NodeError::Recovery(why));
                }
            };
            log.durable_through = Some(log.binlog.coord());
            *self.watch.position.lock() = GtidPosition::new();
            *self.watch.end.lock() = log.binlog.coord();
            self.recent.lock().clear();
            if reuse_seq_nos {
                self.commit.reset_counters(&self.slave_position());
            }
            Ok(removed)
        })?;
        tracing::warn!(removed = ?removed, first_file = %file_name(first_seq), reuse_seq_nos, "RESET MASTER");
        self.watch.moved.notify_all();
        self.watch.moved_async.notify_waiters();
        Ok(removed)
    }

    /// FLUSH BINARY LOGS DELETE_DOMAIN_ID=(...): rotates, the new file's GTID list leaving out the domains no
    /// binlog file still present holds (all or nothing: one that a file may hold refuses the whole call, and
    /// nothing changes). The domains' seq_no counters stay, so their GTIDs are never handed out again. Returns
    /// the new file's name and what was deleted.
    pub fn flush_logs_deleting_domains(
        &self,
        domains: &[DomainId],
    ) -> Result<(String, DomainDeletion), DeleteDomainError> {
        let durability = self.config.commit.durability;
        self.commit.with_log(|log| {
            let oldest = log.binlog.file_names()[0].clone();
            let began =
                read_gtid_list_on(&**log.binlog.fs(), &log.binlog.dir().join(&oldest)).map_err(NodeError::from)?;
            let deletion = check_deletion(log.binlog.state(), &BinlogState::from_gtids(began), &oldest, domains)?;
            let newest: Vec<Gtid> =
                deletion.deleted.iter().filter_map(|&d| log.binlog.state().position().get(d)).collect();
            log.rotate_forgetting(durability, &deletion.deleted).map_err(NodeError::from)?;
            {
                let mut position = self.watch.position.lock();
                for g in newest {
                    if position.get(g.domain) == Some(g) {
                        position.remove(g.domain);
                    }
                }
            }
            if !deletion.deleted.is_empty() {
                tracing::info!(deleted = ?deletion.deleted, "domains deleted from the binlog state");
            }
            Ok((file_name(log.binlog.coord().file_seq), deletion))
        })
    }

    /// Deletes binlog files before `file` (PURGE BINARY LOGS TO); refuses to touch files recovery still needs.
    pub fn purge_logs_before(&self, file: &str) -> Result<Vec<String>, NodeError> {
        self.purge_logs(file, &[]).map_err(|e| match e {
            PurgeError::Node(e) => e,
            in_use => NodeError::Binlog(BinlogError::Invalid(in_use.to_string())),
        })
    }

    /// PURGE BINARY LOGS TO `file`, refusing (touching nothing) when a connected replica still reads a file it
    /// would delete, or recovery still needs one.
    pub fn purge_logs(&self, file: &str, readers: &[ReaderNeed]) -> Result<Vec<String>, PurgeError> {
        let durability = self.config.commit.durability;
        self.commit.with_log(|log| {
            if let Some(at) = log.binlog.file_names().iter().position(|f| f == file) {
                for name in &log.binlog.file_names()[..at] {
                    let seq = file_seq(name).expect("index holds binlog names");
                    if let Some(reader) = reader_of(seq, readers) {
                        return Err(PurgeError::InUse { file: name.clone(), replica: reader.replica.clone() });
                    }
                }
            }
            let needed_from = recovery_needs_from(log, durability).map_err(NodeError::from)?;
            Ok(log.binlog.purge_before(file, needed_from).map_err(NodeError::from)?)
        })
    }

    /// Binlog expiry: deletes the oldest files `policy` says are due, never one recovery or a connected replica
    /// still needs. Returns the plan carried out (what was purged, and which replica held files back).
    pub fn expire_logs(&self, policy: ExpiryPolicy, readers: &[ReaderNeed]) -> Result<ExpiryPlan, NodeError> {
        let durability = self.config.commit.durability;
        self.commit.with_log(|log| {
            let now = std::time::SystemTime::now();
            let facts: Vec<FileFacts> = log
                .binlog
                .file_names()
                .iter()
                .map(|name| {
                    let (fs, path) = (log.binlog.fs(), log.binlog.dir().join(name));
                    let age =
                        fs.modified(&path).ok().and_then(|m| now.duration_since(m).ok()).map_or(0, |d| d.as_secs());
                    FileFacts {
                        name: name.clone(),
                        seq: file_seq(name).expect("index holds binlog names"),
                        bytes: fs.file_len(&path).unwrap_or(0),
                        age_seconds: age,
                    }
                })
                .collect();
            // A checkpoint (to learn what recovery needs) only when something is due.
            let first = expiry::plan(&facts, policy, u64::MAX, readers);
            if first.purge.is_empty() {
                return Ok(first);
            }
            let plan = expiry::plan(&facts, policy, recovery_needs_from(log, durability)?, readers);
            if let Some(last) = plan.purge.last() {
                let at = facts.iter().position(|f| &f.name == last).expect("planned from these files");
                log.binlog.purge_before(&facts[at + 1].name, u64::MAX)?;
            }
            Ok(plan)
        })
    }

    /// SHOW BINLOG EVENTS IN `file`: its events as `request` says, bounded by what is completely written.
    pub fn binlog_events_in(&self, file: &str, request: ListingRequest) -> Result<Vec<EventRow>, ListingError> {
        let (listed, coord) =
            self.commit.with_log(|log| (log.binlog.file_names().iter().any(|f| f == file), log.binlog.coord()));
        let Some(seq) = file_seq(file).filter(|_| listed) else {
            return Err(ListingError::NoSuchFile { file: file.to_string() });
        };
        let end = if seq == coord.file_seq { Some(coord.offset) } else { request.end };
        list_events(&self.binlog_dir().join(file), ListingRequest { end, ..request })
    }

    pub fn binlog_dir(&self) -> PathBuf {
        self.config.data_dir.join("binlog")
    }
}

/// The first binlog file crash recovery needs: it replays from the last checkpoint on (taken now). A rotation
/// checkpoints before closing a file, so a checkpoint in an older, closed file covers all of its transactions:
/// replay starts in the next one.
fn recovery_needs_from(log: &mut CommitLog, durability: Durability) -> Result<u64, CommitError> {
    let current = log.binlog.coord().file_seq;
    Ok(match log.checkpoint(durability)? {
        Some(c) if c.file_seq < current => c.file_seq + 1,
        Some(c) => c.file_seq,
        None => 1,
    })
}

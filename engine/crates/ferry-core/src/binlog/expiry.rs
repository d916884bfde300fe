//! Binlog expiry (MariaDB's `binlog_expire_logs_seconds` and `max_binlog_total_size`) and the guard every purge
//! goes through: which of the oldest files may go, and what holds the others back. A file goes only as part of a
//! contiguous run from the oldest; never the current file, never one crash recovery still needs, and never one a
//! connected replica still reads — purging stops before it, and the plan says which replica held it back.

use serde::Serialize;

/// When files expire; 0 turns a rule off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ExpiryPolicy {
    /// A closed file whose last write is at least this old is due.
    pub expire_logs_seconds: u64,
    /// While all files together take more than this, the oldest closed files are due.
    pub total_bytes_max: u64,
}

impl ExpiryPolicy {
    pub fn is_off(&self) -> bool {
        self.expire_logs_seconds == 0 && self.total_bytes_max == 0
    }
}

/// One binlog file as the plan sees it, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFacts {
    pub name: String,
    pub seq: u64,
    pub bytes: u64,
    /// Seconds since its last write.
    pub age_seconds: u64,
}

/// A connected replica and the file its stream reads now: that file and every later one are still needed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReaderNeed {
    /// Who it is, for messages (`server_id 2 at 127.0.0.1:5000`).
    pub replica: String,
    pub file_seq: u64,
}

/// Why a file that should go stays.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldBack {
    /// The first file kept.
    pub file: String,
    /// The replica still reading it.
    pub replica: String,
}

/// What may be purged now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpiryPlan {
    /// Files to delete, oldest first.
    pub purge: Vec<String>,
    /// Set when a due file stays because a connected replica still reads it.
    pub held_back: Option<HeldBack>,
}

/// The oldest replica need at or before `seq`, when there is one.
pub fn reader_of(seq: u64, readers: &[ReaderNeed]) -> Option<&ReaderNeed> {
    readers.iter().filter(|r| r.file_seq <= seq).min_by_key(|r| r.file_seq)
}

/// Which of `files` (index order; the last is the current file) expire under `policy`. `keep_from` is the
/// first file crash recovery needs; `readers` are the connected replicas.
pub fn plan(files: &[FileFacts], policy: ExpiryPolicy, keep_from: u64, readers: &[ReaderNeed]) -> ExpiryPlan {
    let mut plan = ExpiryPlan::default();
    if policy.is_off() {
        return plan;
    }
    let mut total: u64 = files.iter().map(|f| f.bytes).sum();
    let closed = files.len().saturating_sub(1);
    for file in &files[..closed] {
        let old = policy.expire_logs_seconds > 0 && file.age_seconds >= policy.expire_logs_seconds;
        let over = policy.total_bytes_max > 0 && total > policy.total_bytes_max;
        if !(old || over) || file.seq >= keep_from {
            break;
        }
        if let Some(reader) = reader_of(file.seq, readers) {
            plan.held_back = Some(HeldBack { file: file.name.clone(), replica: reader.replica.clone() });
            break;
        }
        total -= file.bytes;
        plan.purge.push(file.name.clone());
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(specs: &[(u64, u64)]) -> Vec<FileFacts> {
        specs
            .iter()
            .enumerate()
            .map(|(i, &(bytes, age_seconds))| FileFacts {
                name: format!("f{}", i + 1),
                seq: i as u64 + 1,
                bytes,
                age_seconds,
            })
            .collect()
    }

    fn names(plan: &ExpiryPlan) -> Vec<&str> {
        plan.purge.iter().map(String::as_str).collect()
    }

    #[test]
    fn off_purges_nothing() {
        let fs = files(&[(100, 10_000), (100, 0)]);
        assert_eq!(plan(&fs, ExpiryPolicy::default(), 99, &[]), ExpiryPlan::default());
    }

    #[test]
    fn age_expires_the_old_run_from_the_oldest_never_the_current_file() {
        let fs = files(&[(10, 500), (10, 400), (10, 50), (10, 900), (10, 9999)]);
        let policy = ExpiryPolicy { expire_logs_seconds: 100, total_bytes_max: 0 };
        assert_eq!(names(&plan(&fs, policy, 99, &[])), ["f1", "f2"], "stops at the first young file");
        let all_old = files(&[(10, 500), (10, 400)]);
        assert_eq!(names(&plan(&all_old, policy, 99, &[])), ["f1"], "the current file stays");
    }

    #[test]
    fn size_expires_the_oldest_until_the_total_fits() {
        let fs = files(&[(40, 0), (30, 0), (20, 0), (10, 0)]);
        let policy = ExpiryPolicy { expire_logs_seconds: 0, total_bytes_max: 35 };
        assert_eq!(names(&plan(&fs, policy, 99, &[])), ["f1", "f2"]);
        let policy = ExpiryPolicy { expire_logs_seconds: 0, total_bytes_max: 5 };
        assert_eq!(names(&plan(&fs, policy, 99, &[])), ["f1", "f2", "f3"], "never the current file");
    }

    #[test]
    fn recovery_and_replicas_hold_files_back_and_a_replica_is_named() {
        let fs = files(&[(10, 500), (10, 500), (10, 500), (10, 0)]);
        let policy = ExpiryPolicy { expire_logs_seconds: 100, total_bytes_max: 0 };
        let p = plan(&fs, policy, 2, &[]);
        assert_eq!((names(&p), p.held_back.clone()), (vec!["f1"], None), "recovery needs f2: not a replica's doing");
        let readers = [
            ReaderNeed { replica: "server_id 3".into(), file_seq: 4 },
            ReaderNeed { replica: "server_id 2".into(), file_seq: 2 },
        ];
        let p = plan(&fs, policy, 99, &readers);
        assert_eq!(names(&p), ["f1"]);
        assert_eq!(p.held_back, Some(HeldBack { file: "f2".into(), replica: "server_id 2".into() }));
        assert_eq!(reader_of(3, &readers).unwrap().replica, "server_id 2", "the oldest need first");
        assert_eq!(reader_of(1, &readers), None);
    }
}

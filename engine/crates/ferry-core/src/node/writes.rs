//! Client writes: validation, row images computed under the rows' locks, and the commit through the group
//! commit queue (blocking and async).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{storage_failed, Node, TxnError, TxnRequest};
use crate::admission::Admitted;
use crate::binlog::event::{flags, rows_event_body_len};
use crate::commit::{AwaitingReplicas, Committed, GtidOverride, PreparedTxn};
use crate::row::{row_bytes, Row, RowChange, RowOp, Value};

impl Node {
    fn check_name(&self, what: &str, name: &str) -> Result<(), TxnError> {
        let max = self.config.limits.name_bytes_max;
        if name.is_empty() || name.len() > max {
            return Err(TxnError::Invalid(format!("{what} {name:?} must be 1 to {max} bytes long")));
        }
        if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
            return Err(TxnError::Invalid(format!("{what} {name:?} contains {c:?}: use letters, digits and '_'")));
        }
        Ok(())
    }

    fn validate(&self, req: &TxnRequest, privileged: bool) -> Result<(), TxnError> {
        let limits = &self.config.limits;
        if req.ops.is_empty() {
            return Err(TxnError::Invalid("a transaction needs at least one operation".into()));
        }
        if req.ops.len() > limits.txn_ops_max {
            return Err(TxnError::TooLarge(format!(
                "{} operations, the limit is {}",
                req.ops.len(),
                limits.txn_ops_max
            )));
        }
        if (req.server_id.is_some() || req.seq_no.is_some()) && !privileged {
            return Err(TxnError::PermissionDenied(
                "setting server_id or seq_no needs a privileged (authenticated) connection".into(),
            ));
        }
        for op in &req.ops {
            self.check_name("table name", op.table())?;
            if op.key().len() > limits.key_bytes_max {
                return Err(TxnError::Invalid(format!(
                    "key of {} bytes exceeds the {}-byte limit",
                    op.key().len(),
                    limits.key_bytes_max
                )));
            }
            match op {
                RowOp::Put { row, .. } => row.keys().try_for_each(|f| self.check_name("field name", f))?,
                RowOp::Increment { field, .. } => self.check_name("field name", field)?,
                RowOp::Delete { .. } => {}
            }
        }
        Ok(())
    }

    /// Turns operations into row images against the current rows (locks held by the caller).
    fn images(&self, ops: Vec<RowOp>) -> Result<Vec<RowChange>, TxnError> {
        let keys: Vec<(&str, &str)> = ops.iter().map(|op| (op.table(), op.key())).collect();
        let current = self.store.read_rows(&keys)?;
        let mut overlay: HashMap<(String, String), Option<Row>> = HashMap::new();
        for ((table, key), row) in keys.iter().zip(current) {
            overlay.entry((table.to_string(), key.to_string())).or_insert(row);
        }
        let mut changes = Vec::with_capacity(ops.len());
        let mut bytes = 0usize;
        for op in ops {
            let slot = overlay.get_mut(&(op.table().to_string(), op.key().to_string())).expect("read above");
            let before = slot.clone();
            let (table, key, after) = match op {
                RowOp::Put { table, key, row } => (table, key, Some(row)),
                RowOp::Delete { table, key } => (table, key, None),
                RowOp::Increment { table, key, field, by } => {
                    let mut row = before.clone().unwrap_or_default();
                    let old = match row.get(&field) {
                        None => 0,
                        Some(Value::Int(n)) => *n,
                        Some(Value::Text(_)) => return Err(TxnError::TypeMismatch { table, key, field }),
                    };
                    let Some(new) = old.checked_add(by) else {
                        return Err(TxnError::Overflow { table, key, field });
                    };
                    row.insert(field, Value::Int(new));
                    (table, key, Some(row))
                }
            };
            *slot = after.clone();
            bytes += table.len() + key.len() + after.as_ref().map_or(0, |r| row_bytes(r).len());
            let before = if self.config.log_before_images { before } else { None };
            bytes += before.as_ref().map_or(0, |r| row_bytes(r).len());
            if bytes > self.config.limits.txn_bytes_max {
                return Err(TxnError::TooLarge(format!(
                    "row images exceed the {}-byte transaction limit",
                    self.config.limits.txn_bytes_max
                )));
            }
            changes.push(RowChange { table, key, before, after });
        }
        Ok(changes)
    }

    /// Executes a transaction: locks its rows, computes images, group-commits, releases the locks.
    /// Blocking: call from a thread that may wait.
    pub fn execute(&self, req: TxnRequest, privileged: bool) -> Result<Committed, TxnError> {
        let admitted = self.admit(&req, privileged)?;
        let guard = self.locks.lock(row_keys(&req));
        let txn = self.prepare(req, guard.waited)?;
        let committed = self.commit.commit(txn, Some(admitted))?;
        drop(guard);
        Ok(committed)
    }

    /// [`Node::execute`] for async callers: row-lock waits and the commit wait do not hold a thread; when this
    /// transaction leads its commit group, the group's write and fsync run on the blocking pool.
    pub async fn execute_async(self: &Arc<Self>, req: TxnRequest, privileged: bool) -> Result<Committed, TxnError> {
        let admitted = self.admit(&req, privileged)?;
        let guard = self.locks.lock_async(row_keys(&req)).await;
        let txn = self.prepare(req, guard.waited)?;
        let enqueued = self.commit.enqueue(txn, Some(admitted));
        if enqueued.leader {
            let node = Arc::clone(self);
            tokio::task::spawn_blocking(move || node.commit.lead().map(AwaitingReplicas::wait_and_reply));
        }
        let committed = self.commit.finish(enqueued).await?;
        drop(guard);
        Ok(committed)
    }

    /// Lets a valid client transaction in unless the node is read-only; it is then counted in flight until it
    /// has its answer.
    fn admit(&self, req: &TxnRequest, privileged: bool) -> Result<Admitted, TxnError> {
        self.validate(req, privileged)?;
        if let Some(why) = self.health.failure() {
            return Err(storage_failed(&why));
        }
        self.writes.admit().ok_or(TxnError::ReadOnly)
    }

    /// Row images and GTID settings of a transaction whose row locks are held. A transaction whose row event
    /// would be over `event_bytes_max` is refused here, before it joins the commit queue.
    fn prepare(&self, req: TxnRequest, waited: bool) -> Result<PreparedTxn, TxnError> {
        let changes = self.images(req.ops)?;
        let (bytes, limit) = (rows_event_body_len(&changes), self.config.limits.event_bytes_max);
        if bytes > limit {
            self.counters.refused_event_too_large.fetch_add(1, Ordering::Relaxed);
            return Err(TxnError::EventTooLarge { bytes, limit });
        }
        Ok(PreparedTxn {
            domain: req.domain.unwrap_or(self.config.default_domain),
            gtid_override: GtidOverride { server: req.server_id, seq: req.seq_no },
            changes,
            flags: if waited { flags::WAITED } else { 0 }
                | if self.config.log_before_images { flags::BEFORE_IMAGES } else { 0 },
            commit_ts_us: None,
        })
    }

    pub fn read_row(&self, table: &str, key: &str) -> Result<Option<Row>, TxnError> {
        self.check_name("table name", table)?;
        Ok(self.store.get(table, key)?)
    }
}

/// The rows a transaction locks.
fn row_keys(req: &TxnRequest) -> Vec<(String, String)> {
    req.ops.iter().map(|op| (op.table().to_string(), op.key().to_string())).collect()
}

//! The recipient's durable record of an unfinished clone (`clone-state.json` in the data directory): written when
//! a clone starts, rewritten when it fails or is cancelled, removed once its install is done. While it exists the
//! node is marked `clone_incomplete`: it starts read-only and refuses client writes, leaving read-only and starting
//! replication, whatever happened to the process in between.

use std::path::{Path, PathBuf};

use ferry_core::binlog::intent;
use ferry_core::vfs::Fs;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The record's file name, in the data directory.
pub const RECORD_FILE: &str = "clone-state.json";

/// Where an unfinished clone stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unfinished {
    Copying,
    Failed,
    Cancelled,
}

/// An unfinished clone, as recorded (and shown as the status's `clone_incomplete`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CloneRecord {
    pub clone_id: String,
    pub donor: String,
    pub state: Unfinished,
    /// Why it failed (None while copying or when cancelled).
    pub error: Option<String>,
    /// The donor's snapshot position, once known.
    pub position: Option<String>,
}

fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(RECORD_FILE)
}

/// Writes the record durably.
pub fn write(fs: &dyn Fs, data_dir: &Path, record: &CloneRecord) -> Result<(), String> {
    intent::write(fs, data_dir, &path(data_dir), record, None).map_err(|e| e.to_string())
}

/// The record, when a clone is unfinished.
pub fn read(fs: &dyn Fs, data_dir: &Path) -> Result<Option<CloneRecord>, String> {
    intent::read(fs, &path(data_dir), "clone state").map_err(|e| e.to_string())
}

/// The clone is done: the record goes (durably).
pub fn clear(fs: &dyn Fs, data_dir: &Path) -> Result<(), String> {
    intent::clear(fs, data_dir, &path(data_dir)).map_err(|e| e.to_string())
}

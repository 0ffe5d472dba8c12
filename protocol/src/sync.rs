//! The sync (ingest) job: what to read, and what came of it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One folder to sync. `agent: None` sniffs each file's format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncSource {
    pub agent: Option<String>,
    pub path: PathBuf,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncRequest {
    pub sources: Vec<SyncSource>,
    /// Skip the index update at the end (a later sync or rebuild does it).
    pub skip_index: bool,
    /// Sessions whose project (working directory) contains any of these are not stored;
    /// their files are read again by each sync, so removing an exclusion takes them in.
    #[serde(default)]
    pub exclude_projects: Vec<String>,
}

/// Progress while a sync runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncProgress {
    pub files_done: u64,
    pub files_total: u64,
    pub bytes_done: u64,
    pub bytes_total: u64,
    pub messages: u64,
}

/// Of a project the sync excluded, what the store already held from before: what
/// `pond forget --project` would remove (the sessions whose project contains it, with their
/// subagents, and those sessions' message rows).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExcludedStored {
    /// The exclusion as the request gave it.
    pub project: String,
    pub sessions: u64,
    pub messages: u64,
}

/// A line that was not stored, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkipNote {
    pub path: String,
    pub line: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncReport {
    pub files_seen: u64,
    /// Files not read because `pond forget` forgot their sessions.
    #[serde(default)]
    pub files_forgotten: u64,
    /// Files read but not stored: a forgotten session found under another path, or an
    /// excluded project.
    #[serde(default)]
    pub files_excluded: u64,
    /// Of each excluded project (in the request's order) that the store holds sessions of,
    /// how many: counted by the sync worker after its pass, so that `pond sync` can offer
    /// to forget them. (Never skipped when empty: postcard, the IPC's encoding, cannot
    /// read a struct with a field left out.)
    #[serde(default)]
    pub excluded_stored: Vec<ExcludedStored>,
    /// An interrupted `pond forget` was completed before this sync read anything.
    #[serde(default)]
    pub forget_completed: bool,
    pub files_unchanged: u64,
    pub files_new: u64,
    pub files_appended: u64,
    pub files_rewritten: u64,
    pub files_failed: u64,
    pub bytes_read: u64,
    pub lines_read: u64,
    pub sessions_touched: u64,
    pub messages_added: u64,
    pub parts_added: u64,
    pub records_added: u64,
    /// Model calls whose token counts were stored (`usage`).
    pub usage_added: u64,
    /// Of those, the calls of lines stored before (a store's first sync since pond read
    /// token counts fills them in from `records`).
    pub usage_filled: u64,
    pub duplicate_messages: u64,
    pub duplicate_records: u64,
    /// Message lines stored as replayed copies of messages another session owns (a
    /// subagent replaying its parent, a resumed session copying its predecessor).
    pub replayed_messages: u64,
    /// Stored owners turned into copies because a line with a better claim arrived (a
    /// parent read after its subagent).
    pub demoted_messages: u64,
    /// Second spellings of a file's path found and merged into its canonical path.
    pub paths_repaired: u64,
    /// Whether sessions, messages and parts were re-derived from the stored lines (an
    /// upgrade from an older pond's store, or after a path repair), and from how many files.
    pub rederived: bool,
    pub rederived_files: u64,
    /// Files set aside after the sync worker died reading them, skipped until they change.
    pub set_aside: Vec<String>,
    /// Datasets compacted (too many fragments), and old versions removed.
    pub compacted: u64,
    pub old_versions_removed: u64,
    pub skipped: u64,
    /// Skips counted by the kind of reason ("malformed JSON", "empty line", ...).
    pub skipped_by_reason: BTreeMap<String, u64>,
    /// The first skips in full (file, line, reason); the rest are only counted.
    pub skip_examples: Vec<SkipNote>,
    /// Whether this sync first undid a sync that had died half-way.
    pub recovered_interrupted_sync: bool,
    pub indexes_created: u64,
    pub indexes_updated: bool,
    /// Searchable rows the full-text index does not cover yet (still found by flat scan).
    pub unindexed_rows: u64,
    /// Rows in the row map this sync rebuilt (0: the map was current enough, see
    /// `Store::refresh_rowmap`), and the time it took.
    pub rowmap_rows: u64,
    pub rowmap_ms: u64,
    pub elapsed_ms: u64,
    /// Time spent reading and parsing files, writing rows, and updating indexes.
    pub read_ms: u64,
    pub write_ms: u64,
    pub index_ms: u64,
    /// Peak resident memory (VmHWM) of the process that ran the sync, KiB.
    pub peak_kib: u64,
}

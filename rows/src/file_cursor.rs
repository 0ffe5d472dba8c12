//! Where the last read of a file stopped: what makes the next read incremental.

use serde::{Deserialize, Serialize};

/// Where the last read of a file stopped, and what it had learnt by then.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileCursor {
    /// Bytes consumed: the next read starts here.
    pub offset: u64,
    /// Lines consumed.
    pub line: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub head_len: u64,
    pub head_hash: u64,
    /// `claude-code` or `codex` once sniffed.
    pub format: Option<String>,
    pub session_id: Option<String>,
    pub parent_id: Option<String>,
    pub project: Option<String>,
    pub last_ts: Option<i64>,
    /// The last bytes consumed (up to `TAIL_BYTES`, ending at `offset`) and their hash:
    /// with the head, what identifies the file next time (a rewrite in place that keeps the
    /// head and does not shrink changes them).
    #[serde(default)]
    pub tail_len: u64,
    #[serde(default)]
    pub tail_hash: u64,
    /// The last line consumed had no newline (it was whole JSON): the newline that
    /// completes it later is not a line of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open_line: bool,
    /// The read stopped at its byte budget with lines left: the sync reads on from here
    /// before it commits.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The parser held back the end of the file as unfinished (a turn still being
    /// answered): the file is read again next time even if it did not change, so what stopped
    /// changing is read once it is stale.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
    /// For a session in a database: which rows were read (`offset` and `line` then count
    /// the lines made of them, `size` and `mtime_ns` the session's rows and newest update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<RowCursor>,
    /// The model the last turn read named (`pond_ingest`'s `Common::model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The cumulative token total last read (`pond_ingest`'s `Common::usage_total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_total: Option<u64>,
}

/// Where the last read of a database session stopped. A message (with its parts) is read
/// once it is complete, and again whenever it changes after that; one still being written
/// is held back until it completes or stops changing (see `pond_ingest`'s `database`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RowCursor {
    /// Every message last updated at or before this time (ms) has been read as it was then.
    pub since: i64,
    /// Messages read that were last updated after `since` (every message read, in a
    /// database that keeps no update times): id and the version read (see
    /// `pond_ingest`'s `source::Unit::version`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub above: Vec<(String, i64)>,
    /// The last update of the session's own row that was read.
    pub session: i64,
    /// Messages held back as incomplete: the session is looked at again next time even if
    /// nothing in it changed, so one that stopped changing is read.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

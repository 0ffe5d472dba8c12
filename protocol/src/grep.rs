//! Exact and regex search (`pond search --mode exact|regex`, `pond_search` with those modes):
//! the request the front sends to the sql worker, and the matched lines it gets back.
//!
//! The worker finds candidates in the parts' n-gram indexes, checks the pattern on them
//! newest first and returns one page: the front holds no text but the page.

use serde::{Deserialize, Serialize};

/// One exact or regex search, filters resolved (a session id whole, dates as epoch ms).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepJob {
    /// The text to find as it is (exact), or a regular expression (`regex`).
    pub pattern: String,
    pub regex: bool,
    /// Exact mode only: match case (default: any case). A regex says it with `(?i)`.
    pub case_sensitive: bool,
    /// Also look in tool calls (their input) and tool results (their output).
    pub include_tools: bool,
    pub project: Option<String>,
    pub session_id: Option<String>,
    pub source_agent: Option<String>,
    pub role: Option<String>,
    /// Inclusive lower bound, epoch ms.
    pub from_ms: Option<i64>,
    /// Exclusive upper bound, epoch ms.
    pub to_ms: Option<i64>,
    /// Messages on the page, and messages skipped before it (newest first).
    pub limit: u64,
    pub offset: u64,
    /// Stop checking candidates after this long and say the page may be incomplete.
    pub timeout_ms: u64,
    pub reveal_secrets: bool,
}

/// A page of matching messages, grouped by session, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepResults {
    pub pattern: String,
    pub regex: bool,
    pub case_sensitive: bool,
    pub include_tools: bool,
    pub sessions: Vec<GrepSession>,
    /// Messages on this page.
    pub hits: u64,
    pub offset: u64,
    /// Another page follows (ask again with `offset + hits`).
    pub more: bool,
    /// Messages found to match, those skipped by `offset` included, when checking stopped:
    /// all of them unless `more` is set or a note says the time ran out. (`u32`, as
    /// candidates are at most a million: `Output`, which holds the results, stays small.)
    #[serde(default)]
    pub matched: u32,
    /// The page's size asked for (where the last page starts, past the end).
    #[serde(default)]
    pub limit: u32,
    /// Parts the index (or the scan of a small scope) gave as candidates, and how many of
    /// them were checked.
    pub candidates: u64,
    pub checked: u64,
    /// What the answer could not do as asked (a time limit reached).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepSession {
    pub session_id: String,
    pub title: Option<String>,
    pub project: Option<String>,
    pub source_agent: String,
    pub hits: Vec<GrepHit>,
}

/// One message that matches: its first matching part and the line of the match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepHit {
    pub message_id: String,
    pub role: String,
    /// Epoch ms.
    pub timestamp: i64,
    /// text, thinking, tool_call, tool_result, …
    pub part_type: String,
    pub tool_name: Option<String>,
    /// The line (or lines) holding the first match, cut around it on character
    /// boundaries, secrets masked unless revealed.
    pub line: String,
    /// 1-based line of the match within the part's text.
    pub line_number: u64,
}

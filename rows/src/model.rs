//! The canonical model: plain rows, one struct per stored table, no storage types.
//!
//! Timestamps are milliseconds since the Unix epoch, UTC.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Who speaks in a message. `Tool` is a tool result handed back to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    System,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "system" => Some(Role::System),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// How strongly a message line claims to be the original of its message id, when the same
/// id occurs in more than one session (Claude Code subagent files replay the parent's lines;
/// a resumed session's file copies the earlier session's lines). Lower claims first: of all
/// the occurrences of an id, the one with the lowest `(origin, session)` owns the message
/// (it alone is searchable, and `get-message` resolves to it); the others are stored as
/// replayed copies in their own sessions. See `pond_store::writer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// A session's own line: written in its own main file (or the client has no replays).
    Own,
    /// A main file's line that names another session (`sessionId`): a copy a resumed
    /// session's file carries of its predecessor's lines.
    Copied,
    /// A sidechain line (`isSidechain`): a subagent's file, which may open by replaying its
    /// parent's lines.
    Sidechain,
}

impl Origin {
    pub const ALL: [Origin; 3] = [Origin::Own, Origin::Copied, Origin::Sidechain];

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Own => "own",
            Origin::Copied => "copied",
            Origin::Sidechain => "sidechain",
        }
    }

    pub fn parse(s: &str) -> Option<Origin> {
        Origin::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// One session (one source file). Fields learnt later in a file (title, project, newest
/// timestamp) arrive as a newer `SessionRow` for the same id; the store merges them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionRow {
    pub id: String,
    pub parent_id: Option<String>,
    pub source_agent: String,
    pub project: Option<String>,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
    pub source_path: String,
    pub title: Option<String>,
    /// The raw header record (Codex `session_meta`, Claude's first record), verbatim.
    pub header: Option<String>,
}

impl SessionRow {
    /// Fold a newer observation of the same session into this one: first-seen identity
    /// fields stay, time bounds widen, later titles win.
    pub fn merge(&mut self, newer: &SessionRow) {
        if self.parent_id.is_none() {
            self.parent_id.clone_from(&newer.parent_id);
        }
        if self.project.is_none() {
            self.project.clone_from(&newer.project);
        }
        self.created_at = min_opt(self.created_at, newer.created_at);
        self.updated_at = self.updated_at.max(newer.updated_at);
        if newer.title.is_some() {
            self.title.clone_from(&newer.title);
        }
        if self.header.is_none() {
            self.header.clone_from(&newer.header);
        }
    }
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One message: a user prompt, an assistant turn fragment, a tool result, a system note.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRow {
    pub session_id: String,
    /// Stable id: Claude's `uuid`, Codex's `<session-id>:<line>`.
    pub id: String,
    pub timestamp: i64,
    pub role: Role,
    pub source_agent: String,
    pub project: Option<String>,
    /// Conversational text only (user prompts, assistant text); `None` for tool traffic,
    /// thinking and harness-injected text, which stay reachable through parts and records.
    pub search_text: Option<String>,
    pub model: Option<String>,
    pub source_path: String,
    pub source_line: u64,
    /// The line's claim to be the original of `id` (see [`Origin`]).
    pub origin: Origin,
}

/// One content block of a message.
#[derive(Debug, Clone, PartialEq)]
pub struct PartRow {
    pub session_id: String,
    pub message_id: String,
    /// The source line of the message this part belongs to: with `message_id`, it ties a
    /// part to one occurrence of a message whose id was replayed.
    pub source_line: u64,
    pub ordinal: u32,
    /// text, thinking, tool_call, tool_result, image, or the source's own block type.
    pub part_type: String,
    pub tool_name: Option<String>,
    pub call_id: Option<String>,
    pub is_error: Option<bool>,
    /// Readable text of the block (the text, the thinking, the tool output).
    pub text: Option<String>,
    /// Structured payload as JSON (tool input, image metadata, unknown blocks).
    pub body: Option<String>,
}

impl PartRow {
    /// A part of `m` at `ordinal` with nothing in it yet: the caller fills what it has.
    pub fn of(m: &MessageRow, ordinal: u32, part_type: &str) -> PartRow {
        PartRow {
            session_id: m.session_id.clone(),
            message_id: m.id.clone(),
            source_line: m.source_line,
            ordinal,
            part_type: part_type.to_owned(),
            tool_name: None,
            call_id: None,
            is_error: None,
            text: None,
            body: None,
        }
    }

    /// [`PartRow::of`] with its readable text.
    pub fn with_text(
        m: &MessageRow,
        ordinal: u32,
        part_type: &str,
        text: Option<String>,
    ) -> PartRow {
        PartRow {
            text,
            ..PartRow::of(m, ordinal, part_type)
        }
    }
}

/// What one model call cost in tokens, as the client recorded it: one row per API response
/// (Claude Code writes one response over several lines: they share `key` and count once),
/// per Codex `token_count` turn, per Gemini or OpenCode answer.
///
/// `input` is the input not read from a cache (Codex and Gemini count cached input inside
/// their input: it is taken out here), `output` includes `reasoning`.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// The session the tokens count for: a subagent's file counts for its parent session.
    pub session_id: String,
    /// The message of this response, where it is one (Codex's turns are events, not
    /// messages).
    pub message_id: Option<String>,
    /// What makes the response one: rows with the same key are the same response, stored
    /// once store-wide (Claude: `message.id:requestId`, else the line's `uuid`; others:
    /// `<session>:<message or line>`).
    pub key: String,
    pub timestamp: i64,
    pub source_agent: String,
    pub project: Option<String>,
    pub model: Option<String>,
    /// The provider's request or response id, where the client wrote one.
    pub request_id: Option<String>,
    pub input: u64,
    pub output: u64,
    pub cache_write: u64,
    pub cache_read: u64,
    pub reasoning: u64,
    /// The cost in USD where the client itself recorded it (OpenCode); otherwise computed
    /// from a price table when read.
    pub cost_usd: Option<f64>,
    pub source_path: String,
    pub source_line: u64,
}

/// The most tokens one model call is believed to count in any of its fields (ten billion,
/// thousands of times the largest context window): a row counting more is a client's
/// bad number, ignored with a skip note ([`FileBatch::push_usage`]), never summed.
pub const MAX_CALL_TOKENS: u64 = 10_000_000_000;

impl UsageRow {
    /// The first count over [`MAX_CALL_TOKENS`], named as the usage table names it.
    fn over_bound(&self) -> Option<(&'static str, u64)> {
        [
            ("input", self.input),
            ("output", self.output),
            ("cache_write", self.cache_write),
            ("cache_read", self.cache_read),
            ("reasoning", self.reasoning),
        ]
        .into_iter()
        .find(|&(_, n)| n > MAX_CALL_TOKENS)
    }
}

/// One source line, verbatim. Every line that is not skipped becomes one of these.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordRow {
    pub source_path: String,
    /// 1-based line number in the source file.
    pub line: u64,
    pub byte_offset: u64,
    pub session_id: Option<String>,
    pub record_type: Option<String>,
    pub raw: String,
}

/// A line that could not be stored, with the reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skip {
    pub path: String,
    pub line: u64,
    pub reason: String,
}

impl Skip {
    /// The reason's kind, for counting: the text before its first colon or parenthesis.
    pub fn kind(&self) -> &str {
        self.reason
            .split([':', '('])
            .next()
            .unwrap_or(&self.reason)
            .trim()
    }
}

/// Skipped lines kept in full per file pass; the others are only counted (10 MiB of blank
/// lines once held ten million of them).
pub const SKIP_EXAMPLES_PER_FILE: usize = 20;

/// Everything read from one file in one pass (or several files, appended in order).
///
/// Contract: the parts of a message are contiguous in `parts`, in the order of their
/// messages in `messages`, with ordinals 0, 1, 2, ...; a message may have none.
#[derive(Debug, Default)]
pub struct FileBatch {
    pub sessions: Vec<SessionRow>,
    pub messages: Vec<MessageRow>,
    pub parts: Vec<PartRow>,
    pub records: Vec<RecordRow>,
    /// Token counts of model calls, in line order.
    pub usage: Vec<UsageRow>,
    /// The first skipped lines of each file, in full.
    pub skips: Vec<Skip>,
    /// Every skipped line, counted by the kind of its reason ([`Skip::kind`]).
    pub skipped: BTreeMap<String, u64>,
}

impl FileBatch {
    pub fn append(&mut self, other: FileBatch) {
        self.sessions.extend(other.sessions);
        self.messages.extend(other.messages);
        self.parts.extend(other.parts);
        self.records.extend(other.records);
        self.usage.extend(other.usage);
        self.skips.extend(other.skips);
        for (kind, n) in other.skipped {
            *self.skipped.entry(kind).or_default() += n;
        }
    }

    /// A message and its parts, the parts numbered 0, 1, 2, ... in the order given.
    pub fn push_message(&mut self, m: MessageRow, parts: Vec<PartRow>) {
        for (i, mut p) in parts.into_iter().enumerate() {
            p.ordinal = i as u32;
            self.parts.push(p);
        }
        self.messages.push(m);
    }

    /// A model call's usage row; one with a count over [`MAX_CALL_TOKENS`] is not kept
    /// but noted as a skip (its line is kept in records, as it is).
    pub fn push_usage(&mut self, u: UsageRow) {
        let Some((field, n)) = u.over_bound() else {
            return self.usage.push(u);
        };
        let skip = Skip {
            path: u.source_path,
            line: u.source_line,
            reason: format!(
                "usage ignored: {field} of {n} tokens in one call is over the \
                 {MAX_CALL_TOKENS}-token limit (the line is kept in records)"
            ),
        };
        let examples = self.skips.len();
        self.skip(skip, examples);
    }

    /// Note a skipped line: counted always, kept in full while `examples` allows.
    pub fn skip(&mut self, skip: Skip, examples: usize) {
        *self.skipped.entry(skip.kind().to_owned()).or_default() += 1;
        if examples < SKIP_EXAMPLES_PER_FILE {
            self.skips.push(skip);
        }
    }

    /// Lines skipped in all.
    pub fn skipped_lines(&self) -> u64 {
        self.skipped.values().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
            && self.messages.is_empty()
            && self.parts.is_empty()
            && self.records.is_empty()
            && self.usage.is_empty()
    }

    /// Approximate bytes held, to decide when to flush.
    pub fn approx_bytes(&self) -> usize {
        let m: usize = self
            .messages
            .iter()
            .map(|m| 128 + m.search_text.as_ref().map_or(0, String::len))
            .sum();
        let p: usize = self
            .parts
            .iter()
            .map(|p| {
                96 + p.text.as_ref().map_or(0, String::len) + p.body.as_ref().map_or(0, String::len)
            })
            .sum();
        let r: usize = self.records.iter().map(|r| 96 + r.raw.len()).sum();
        m + p + r + self.usage.len() * 256
    }
}

/// Batches gathered for one write, their approximate size kept as each comes (summing the
/// whole gathered batch again after every file was 2 % of a sync's time).
#[derive(Debug, Default)]
pub struct PendingBatch {
    batch: FileBatch,
    bytes: usize,
}

impl PendingBatch {
    pub fn append(&mut self, other: FileBatch) {
        self.bytes += other.approx_bytes();
        self.batch.append(other);
    }

    /// [`FileBatch::approx_bytes`] of what is held.
    pub fn approx_bytes(&self) -> usize {
        self.bytes
    }

    pub fn messages(&self) -> usize {
        self.batch.messages.len()
    }

    /// What is held, leaving nothing.
    pub fn take(&mut self) -> FileBatch {
        self.bytes = 0;
        std::mem::take(&mut self.batch)
    }
}

//! What both parsers keep for one pass over one file: its session row and clock.

use crate::model::{MessageRow, Origin, Role, SessionRow, UsageRow};

/// Lines longer than this are skipped (with a reason), never buffered whole.
pub const MAX_LINE_BYTES: usize = 32 << 20;

/// A message a client is still writing is read as it is once it has not changed for this
/// long (the client died or was closed mid-turn).
pub const STALE_MS: i64 = 30 * 60 * 1000;

/// Append the hex of `bytes` to `out`, two lowercase digits a byte.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
}

/// The time now, in ms since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// State shared by both parsers for one pass over one file.
pub(crate) struct Common {
    pub path: String,
    pub session: SessionRow,
    pub last_ts: Option<i64>,
    pub fallback_ts: i64,
    /// The parser held back the end of the file as unfinished (`FileCursor::held`).
    pub held: bool,
    /// The model the file's last turn named (Codex's `turn_context`), for the token counts
    /// that follow it, kept across reads (`FileCursor::model`).
    pub model: Option<String>,
    /// The cumulative total of the last Codex token count (`FileCursor::usage_total`): a
    /// count that repeats it is the same turn written again.
    pub usage_total: Option<u64>,
}

impl Common {
    /// Note a record's timestamp; returns the timestamp to give a message on this line.
    pub fn touch(&mut self, ts: Option<i64>) -> i64 {
        if let Some(t) = ts {
            self.last_ts = Some(t);
            self.session.created_at = Some(self.session.created_at.map_or(t, |c| c.min(t)));
            self.session.updated_at = Some(self.session.updated_at.map_or(t, |c| c.max(t)));
        }
        self.last_ts
            .or(self.session.created_at)
            .unwrap_or(self.fallback_ts)
    }

    /// Widen the session's time bounds by a session row's own times (ms): created, and
    /// last updated (else created).
    pub fn span(&mut self, created: Option<i64>, updated: Option<i64>) {
        let s = &mut self.session;
        if let Some(t) = created {
            s.created_at = Some(s.created_at.map_or(t, |x| x.min(t)));
        }
        if let Some(t) = updated.or(created) {
            s.updated_at = Some(s.updated_at.map_or(t, |x| x.max(t)));
        }
    }

    /// The session token counts of this file count for: a subagent's parent, else its own.
    pub fn usage_session(&self) -> String {
        self.session
            .parent_id
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| self.session.id.clone())
    }

    /// A message of the pass's session from line `line_no` of its file: in the session's
    /// project, nothing said yet (`search_text`), no model.
    pub fn message(
        &self,
        id: String,
        timestamp: i64,
        role: Role,
        source_agent: &str,
        line_no: u64,
        origin: Origin,
    ) -> MessageRow {
        MessageRow {
            session_id: self.session.id.clone(),
            id,
            timestamp,
            role,
            source_agent: source_agent.to_owned(),
            project: self.session.project.clone(),
            search_text: None,
            model: None,
            source_path: self.path.clone(),
            source_line: line_no,
            origin,
        }
    }

    /// A usage row of the pass's session at `line_no` with no tokens yet: subagents count
    /// for their parent session.
    pub(crate) fn usage_row(&self, key: String, ts: i64, agent: &str, line_no: u64) -> UsageRow {
        UsageRow {
            session_id: self.usage_session(),
            message_id: None,
            key,
            timestamp: ts,
            source_agent: agent.to_owned(),
            project: self.session.project.clone(),
            model: None,
            request_id: None,
            input: 0,
            output: 0,
            cache_write: 0,
            cache_read: 0,
            reasoning: 0,
            cost_usd: None,
            source_path: self.path.clone(),
            source_line: line_no,
        }
    }
}

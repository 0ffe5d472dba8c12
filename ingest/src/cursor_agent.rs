//! Cursor's agent transcripts, written by the Cursor agent CLI and by the IDE's agent:
//! `$CURSOR_CONFIG_DIR` or `~/.cursor`, `projects/<workspace slug>/agent-transcripts/`
//! `<id>/<id>.jsonl` (older builds: `agent-transcripts/<id>.jsonl`, and before them the
//! same in plain text, `<id>.txt`: see `crate::cursor_text`; a `.txt` beside a `.jsonl` of
//! the same name is left to it). One line per message:
//! `{role, message: {content}}` with Anthropic-shaped blocks (`text`, `tool_use` with
//! Cursor's tool names, sometimes `tool_result`), and control lines with a `type`
//! (`turn_ended {status, error?}`, a first `metadata {overview}`).
//!
//! Lines carry no ids and no timestamps: a message's id is `<session>:<line>`, and its time
//! the last `<timestamp>…</timestamp>` a user turn carried (else the file's time). Cursor
//! sometimes rewrites a transcript whole, pruned: the file is then read again, its new lines
//! stored as records, but a message whose line number a stored one already has stays that
//! stored message (a session holds an id once), so after a prune and more growth some new
//! lines are records only. What the
//! user typed is inside `<user_query>…</user_query>`; the other tagged blocks of a user turn
//! (`<user_info>`, `<rules>`, `<git_status>`, …) are context the client added, stored but not
//! searchable. The workspace path is `workspacePath=` of the project folder's `worker.log`
//! when it is there, else the `Workspace Path:` a user turn's `<user_info>` names, else the
//! folder's slug (Cursor's slug cannot be turned back into a path).
//! A `turn_ended` that did not succeed is a system message; the other control lines are
//! records only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use pond_rows::clients::{self, AGENT_CURSOR};
use serde_json::Value;

use crate::blocks::{all_results, content_blocks, Blocks};
use crate::common::{now_ms, Common, STALE_MS};
use crate::cursor_text;
use crate::model::{FileBatch, MessageRow, Origin, PartRow, Role};
use crate::source::{RecordParser, Source, SourceFile};
use crate::text::{is_harness_text, join_search, str_field};

/// Cursor: `$CURSOR_CONFIG_DIR` or `~/.cursor`, transcripts under `projects/`.
pub static SOURCE: Source = Source {
    client: &clients::CURSOR,
    layout: &["projects"],
    transcript: is_transcript,
    sniff,
    parser: |file, common| Box::new(CursorParser::new(file, common)),
    database: None,
    replayed: false,
    documents: false,
    text: true,
};

/// A file under `agent-transcripts`; a `.txt` one only when no `.jsonl` of the same name
/// is beside it (a build that wrote both: the `.jsonl` says more).
fn is_transcript(path: &Path) -> bool {
    path.components()
        .any(|c| c.as_os_str() == "agent-transcripts")
        && !(crate::source::is_txt(path) && path.with_extension("jsonl").is_file())
}

/// `{role, message}` with no `type`, `uuid` or `sessionId` (Claude Code's lines have them).
fn sniff(v: &Value) -> bool {
    v.get("role")
        .and_then(Value::as_str)
        .is_some_and(|r| matches!(r, "user" | "assistant"))
        && v.get("message").is_some_and(Value::is_object)
        && v.get("type").is_none()
}

pub struct CursorParser {
    blocks: Blocks,
    /// The project is only the folder's slug: a workspace a user turn states replaces it.
    slug_only: bool,
    /// The turn of a plain-text transcript being read (`crate::cursor_text`).
    turn: Option<TextTurn>,
}

/// A turn of a plain-text transcript: its first line's number, whose it is, its lines.
struct TextTurn {
    line: u64,
    role: Role,
    lines: Vec<(u64, String)>,
}

/// The folder under `projects/` a transcript is in (Cursor's slug of its workspace).
fn project_folder(path: &Path) -> Option<&Path> {
    let mut p = path.parent();
    while let Some(dir) = p {
        if dir.parent()?.file_name()? == "projects" {
            return Some(dir);
        }
        p = dir.parent();
    }
    None
}

/// How far into a `worker.log` its `workspacePath=` is looked for: the worker names its
/// workspace as it starts, at the top of its log, which may grow large after.
const WORKER_LOG_SCAN_BYTES: u64 = 1 << 20;

/// The workspace a project folder stands for: `workspacePath=` in its `worker.log`. Found
/// once per process (a sync worker) for each folder, not once per transcript in it; a
/// folder whose log does not name it yet is looked at again.
fn logged_workspace(folder: &Path) -> Option<String> {
    static FOUND: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
    let found = FOUND.get_or_init(Default::default);
    let seen = |f: &Path| {
        let found = found.lock().unwrap_or_else(|e| e.into_inner());
        found.get(f).cloned()
    };
    if let Some(w) = seen(folder) {
        return Some(w);
    }
    let log = folder.join("worker.log");
    let w = crate::side::find_in_side_file(&log, WORKER_LOG_SCAN_BYTES, |l| {
        let at = l.find("workspacePath=")? + "workspacePath=".len();
        let v = l[at..].split_whitespace().next()?;
        Some(v.trim_matches(|c| c == '"' || c == ',').to_owned())
    })
    .filter(|v| !v.is_empty())?;
    let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
    found.insert(folder.to_owned(), w.clone());
    Some(w)
}

/// The `Workspace Path:` line of the context Cursor adds to a user turn.
fn stated_workspace(text: &str) -> Option<String> {
    let at = text.find("Workspace Path:")? + "Workspace Path:".len();
    let v = text[at..].lines().next()?.trim();
    (!v.is_empty()).then(|| v.to_owned())
}

impl CursorParser {
    fn new(file: &SourceFile, common: &mut Common) -> Self {
        if common.session.id.is_empty() {
            common.session.id = file.stem();
        }
        let mut slug_only = false;
        if common.session.project.is_none() {
            let folder = project_folder(&file.path);
            common.session.project = folder.and_then(logged_workspace);
            if common.session.project.is_none() {
                common.session.project = folder.and_then(Path::file_name).map(crate::paths::os_key);
                slug_only = true;
            }
        }
        CursorParser {
            blocks: Blocks::default(),
            slug_only,
            turn: None,
        }
    }

    /// A user turn's time (`<timestamp>`) and the workspace it states, noted.
    fn user_turn(&mut self, c: &mut Common, texts: &[String]) -> i64 {
        let said = texts.iter().find_map(|t| sent_at(t));
        if self.slug_only {
            let stated = texts.iter().find_map(|t| stated_workspace(t));
            if stated.is_some() {
                c.session.project = stated;
                self.slug_only = false;
            }
        }
        c.touch(said)
    }

    /// A turn of a plain-text transcript as a message: a prompt, or an answer's text,
    /// thinking, tool calls and results.
    fn text_turn(&mut self, c: &mut Common, t: TextTurn, out: &mut FileBatch) {
        let text = cursor_text::joined(&t.lines);
        let ts = match t.role {
            Role::User => self.user_turn(c, std::slice::from_ref(&text)),
            _ => c.touch(None),
        };
        let mut m = self.message_row(c, t.line, ts, t.role);
        if t.role == Role::User {
            m.search_text = join_search(typed_by_user(&text).into_iter().collect());
            out.parts.push(PartRow::with_text(
                &m,
                0,
                "text",
                Some(text).filter(|t| !t.is_empty()),
            ));
            out.messages.push(m);
            return;
        }
        let mut said = Vec::new();
        for (i, s) in cursor_text::sections(&t.lines).iter().enumerate() {
            let mut p = match s.kind {
                "tool_call" => PartRow {
                    body: Some(s.arguments().to_string()),
                    ..PartRow::of(&m, i as u32, s.kind)
                },
                _ => PartRow::with_text(&m, i as u32, s.kind, s.text()),
            };
            p.tool_name.clone_from(&s.name);
            if s.kind == "text" {
                said.extend(p.text.clone());
            }
            out.parts.push(p);
        }
        m.search_text = join_search(said);
        out.messages.push(m);
    }

    fn message_row(&self, c: &Common, line_no: u64, ts: i64, role: Role) -> MessageRow {
        let id = format!("{}:{line_no}", c.session.id);
        // Ids are `<session>:<line>`: no other session holds them.
        c.message(id, ts, role, AGENT_CURSOR, line_no, Origin::Own)
    }

    fn message(&mut self, c: &mut Common, line_no: u64, v: &Value, out: &mut FileBatch) {
        let assistant = v.get("role").and_then(Value::as_str) == Some("assistant");
        let content = v.pointer("/message/content").unwrap_or(&Value::Null);
        let blocks = content_blocks(content);
        // A user turn may say when it was sent; the answers after it inherit that time.
        let ts = if assistant {
            c.touch(None)
        } else {
            let texts: Vec<String> = blocks.iter().filter_map(|b| str_field(b, "text")).collect();
            self.user_turn(c, &texts)
        };
        let role = if assistant {
            Role::Assistant
        } else if all_results(&blocks) {
            Role::Tool
        } else {
            Role::User
        };
        let mut m = self.message_row(c, line_no, ts, role);
        m.model = v
            .pointer("/message/model")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut fragments = Vec::new();
        let parts: Vec<PartRow> = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| self.blocks.part(&m, i as u32, b))
            .collect();
        for p in &parts {
            let Some(t) = p.text.as_deref().filter(|_| p.part_type == "text") else {
                continue;
            };
            match role {
                Role::Assistant => fragments.push(t.to_owned()),
                Role::User => fragments.extend(typed_by_user(t)),
                _ => {}
            }
        }
        m.search_text = join_search(fragments);
        out.parts.extend(parts);
        out.messages.push(m);
    }
}

impl RecordParser for CursorParser {
    fn source_agent(&self) -> &'static str {
        AGENT_CURSOR
    }

    fn line(
        &mut self,
        c: &mut Common,
        line_no: u64,
        v: &Value,
        _raw: &str,
        out: &mut FileBatch,
    ) -> Option<String> {
        match v.get("type").and_then(Value::as_str) {
            Some("metadata") => {
                if let Some(t) = v.pointer("/metadata/overview").and_then(Value::as_str) {
                    c.session.title = Some(t.to_owned());
                }
                Some("metadata".into())
            }
            Some("turn_ended") => {
                let status = str_field(v, "status");
                if status.as_deref().is_some_and(|s| s != "success") {
                    let ts = c.touch(None);
                    let m = self.message_row(c, line_no, ts, Role::System);
                    let error = v.get("error").map(|e| match e {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    });
                    let text = match (status.as_deref(), error) {
                        (Some(s), Some(e)) => format!("turn ended: {s}: {e}"),
                        (s, None) => format!("turn ended: {}", s.unwrap_or("?")),
                        (None, Some(e)) => format!("turn ended: {e}"),
                    };
                    out.parts.push(PartRow {
                        is_error: Some(true),
                        text: Some(text),
                        ..PartRow::of(&m, 0, "text")
                    });
                    out.messages.push(m);
                }
                Some("turn_ended".into())
            }
            Some(other) => Some(other.to_owned()),
            None => {
                let role = v.get("role").and_then(Value::as_str)?.to_owned();
                if v.get("message").is_some_and(Value::is_object) {
                    self.message(c, line_no, v, out);
                }
                Some(role)
            }
        }
    }

    fn text_line(
        &mut self,
        c: &mut Common,
        line_no: u64,
        text: &str,
        out: &mut FileBatch,
    ) -> Option<String> {
        if let Some(role) = cursor_text::turn(text) {
            if let Some(t) = self.turn.take() {
                self.text_turn(c, t, out);
            }
            self.turn = Some(TextTurn {
                line: line_no,
                role,
                lines: Vec::new(),
            });
            return Some(role.as_str().to_owned());
        }
        // Lines before the first turn are records only.
        let t = self.turn.as_mut()?;
        t.lines.push((line_no, text.to_owned()));
        Some(format!("{}/line", t.role.as_str()))
    }

    /// A text transcript's last turn: read once the file has stopped changing (Cursor may
    /// still be writing it), else looked at again next sync.
    fn finish(&mut self, c: &mut Common, out: &mut FileBatch) {
        let Some(t) = self.turn.take() else {
            return;
        };
        if now_ms() - c.fallback_ts >= STALE_MS {
            self.text_turn(c, t, out);
        } else {
            c.held = true;
        }
    }
}

/// What the user typed in a user turn's text: the inside of `<user_query>`, else the text
/// when it is not a block of context the client added (a leading tag, a harness prefix).
fn typed_by_user(t: &str) -> Option<String> {
    if let Some(start) = t.find("<user_query>") {
        let inner = &t[start + "<user_query>".len()..];
        let inner = inner
            .find("</user_query>")
            .map_or(inner, |end| &inner[..end]);
        return Some(inner.trim().to_owned()).filter(|s| !s.is_empty());
    }
    let trimmed = t.trim_start();
    (!trimmed.starts_with('<') && !is_harness_text(trimmed)).then(|| t.to_owned())
}

/// The time in a `<timestamp>Sunday, Jul 26, 2026, 1:06 PM (UTC+3)</timestamp>` tag, as
/// epoch milliseconds.
fn sent_at(text: &str) -> Option<i64> {
    let start = text.find("<timestamp>")? + "<timestamp>".len();
    let rest = &text[start..];
    let inner = rest[..rest.find("</timestamp>")?].trim();
    // "Sunday, Jul 26, 2026, 1:06 PM (UTC+3)": the weekday first, the offset last.
    let (when, zone) = match inner.rfind('(') {
        Some(at) => (
            inner[..at].trim(),
            inner[at..].trim_matches(|c| c == '(' || c == ')'),
        ),
        None => (inner, "UTC"),
    };
    let when = when.split_once(", ").map_or(when, |(_, rest)| rest);
    let local = chrono::NaiveDateTime::parse_from_str(when, "%b %d, %Y, %I:%M %p").ok()?;
    let offset = zone
        .strip_prefix("UTC")
        .or_else(|| zone.strip_prefix("GMT"))?;
    let offset_min = if offset.is_empty() {
        0
    } else {
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let digits = offset.trim_start_matches(['+', '-']);
        let (h, m) = digits.split_once(':').unwrap_or((digits, "0"));
        sign * (h.parse::<i64>().ok()? * 60 + m.parse::<i64>().ok()?)
    };
    Some(local.and_utc().timestamp_millis() - offset_min * 60_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_from_the_tag_cursor_writes() {
        let t = |s: &str| {
            sent_at(&format!(
                "<timestamp>{s}</timestamp>\n<user_query>x</user_query>"
            ))
        };
        // 13:06 at UTC+3 is 10:06 UTC.
        assert_eq!(
            t("Sunday, Jul 26, 2026, 1:06 PM (UTC+3)"),
            Some(1_785_060_360_000)
        );
        assert_eq!(
            t("Sunday, Jul 26, 2026, 10:06 AM (UTC)"),
            Some(1_785_060_360_000)
        );
        assert_eq!(
            t("Sunday, Jul 26, 2026, 4:36 AM (UTC-5:30)"),
            Some(1_785_060_360_000)
        );
        assert_eq!(t("yesterday"), None);
        assert_eq!(sent_at("no tag"), None);
    }

    #[test]
    fn what_the_user_typed() {
        assert_eq!(
            typed_by_user(
                "<user_info>\nOS: linux\n</user_info>\n<user_query>\nfix it\n</user_query>"
            )
            .as_deref(),
            Some("fix it")
        );
        assert_eq!(typed_by_user("<rules>be brief</rules>"), None);
        assert_eq!(typed_by_user("plain words").as_deref(), Some("plain words"));
    }

    #[test]
    fn the_workspace_a_turn_states() {
        let text = "<user_info>\nOS Version: linux\nWorkspace Path: /home/a/b c\n</user_info>";
        assert_eq!(stated_workspace(text).as_deref(), Some("/home/a/b c"));
        assert_eq!(
            stated_workspace("<user_info>\nOS: linux\n</user_info>"),
            None
        );
    }

    #[test]
    fn the_project_folder_of_either_layout() {
        let flat = Path::new("/h/.cursor/projects/home-dev-x/agent-transcripts/a.jsonl");
        let nested = Path::new("/h/.cursor/projects/home-dev-x/agent-transcripts/a/a.jsonl");
        for p in [flat, nested] {
            assert_eq!(
                project_folder(p),
                Some(Path::new("/h/.cursor/projects/home-dev-x"))
            );
        }
        assert_eq!(project_folder(Path::new("/elsewhere/a.jsonl")), None);
    }
}

//! Gemini CLI: `$GEMINI_CLI_HOME/.gemini` or `~/.gemini`, one folder per project under
//! `tmp/<project id>/chats/`: `session-<time>-<id>.jsonl` (a subagent's chat in
//! `chats/<parent session id>/<id>.jsonl`). The file is an operation log: a first metadata
//! line (`sessionId`, `projectHash`, `startTime`, `kind`, `summary`), message records keyed
//! by `id` (a message that changes, as its tool calls run, is appended again whole under the
//! same id: the later copy replaces it), `{"$set": {...}}` metadata updates (with `messages`:
//! a checkpoint that replaces them all) and `{"$rewindTo": id}`, which removes that message
//! and everything after it.
//!
//! Message records: `user` (searchable: `displayContent` when the client kept what was
//! typed, else `content`; the `System: Please continue.` the client sends by itself after a
//! turn that stopped short is a system message), `gemini` (the answer: thoughts as thinking
//! parts, the text, each tool call with its inline result), `info`/`error`/`warning` (system
//! messages).
//!
//! Older builds wrote the chat as one JSON document, `session-<time>-<id>.json`, rewritten
//! whole as it grew: `{sessionId, projectHash, startTime, lastUpdated, messages: [...]}`. It
//! is one record (`Source::documents`), read again whole when it changes; a session resumed
//! by a newer build continues in a `.jsonl` file under the same `sessionId`, and each
//! message is stored once whichever file holds it.
//!
//! Replacements and rewinds are applied to what one read of the file produced. Gemini CLI's
//! sessions are read whole the first time (most are finished: the client stopped serving
//! individual accounts in June 2026); a session still being written, read again after it
//! grew, keeps the copy of a message stored first, and a rewind cannot remove what an earlier
//! sync stored. Every line stays in `records` either way.

use std::path::Path;

use pond_rows::clients;
use serde_json::Value;

use crate::common::Common;
use crate::model::{tokens, FileBatch, MessageRow, Origin, PartRow, Role, UsageRow};
use crate::side::{read_side_file, SIDE_FILE_BYTES};
use crate::source::{RecordParser, Source, SourceFile};
use crate::text::{join_search, parse_ts, str_field};

/// Gemini CLI: `$GEMINI_CLI_HOME/.gemini` or `~/.gemini`, chats under `tmp/`.
pub static SOURCE: Source = Source {
    client: &clients::GEMINI,
    layout: &["tmp"],
    transcript: is_chat,
    sniff,
    parser: |file, common| Box::new(GeminiParser::new(file, common)),
    database: None,
    replayed: false,
    documents: true,
    text: false,
};

/// A file under a `chats` folder: a `.jsonl` log, or an older build's whole chat
/// (`session-*.json`; the folder's other JSON files are the client's checkpoints).
fn is_chat(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "chats")
        && (path.extension().is_some_and(|e| e == "jsonl")
            || path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("session-") && n.ends_with(".json")))
}

/// The metadata line (`sessionId` with `projectHash`), or a message record of Gemini's
/// kinds (`type` `gemini`), or a control line (`$set`, `$rewindTo`).
fn sniff(v: &Value) -> bool {
    (v.get("sessionId").is_some() && v.get("projectHash").is_some())
        || v.get("type").and_then(Value::as_str) == Some("gemini")
        || v.get("$rewindTo").is_some()
        || v.get("$set").is_some()
}

/// The user turn Gemini CLI sends by itself when the model stopped short (after a tool
/// call, or a stream it could not read): a system message, not a prompt the user typed.
const CONTINUE: &str = "System: Please continue.";

pub struct GeminiParser {
    subagent: bool,
}

/// The project's folder (`tmp/<project id>`) a chat file is in.
fn project_dir(path: &Path) -> Option<&Path> {
    let mut p = path.parent();
    while let Some(dir) = p {
        if dir.file_name()? == "chats" {
            return dir.parent();
        }
        p = dir.parent();
    }
    None
}

/// The most read of `projects.json`: one entry per project the client was used in.
const PROJECTS_JSON_BYTES: u64 = 4 << 20;

/// The project's path: its `.project_root`, else the entry of `projects.json` (in the home,
/// beside `tmp/`) that maps to the project's id.
fn project_root(dir: &Path) -> Option<String> {
    let root = read_side_file(&dir.join(".project_root"), SIDE_FILE_BYTES);
    if let Some(root) = root.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
        return Some(root.to_owned());
    }
    let id = dir.file_name()?.to_str()?;
    let home = dir.parent()?.parent()?;
    let projects = read_side_file(&home.join("projects.json"), PROJECTS_JSON_BYTES)?;
    let projects: Value = serde_json::from_str(&projects).ok()?;
    projects
        .get("projects")?
        .as_object()?
        .iter()
        .find(|(_, v)| v.as_str() == Some(id))
        .map(|(path, _)| path.clone())
}

impl GeminiParser {
    fn new(file: &SourceFile, common: &mut Common) -> Self {
        if common.session.id.is_empty() {
            common.session.id = file.stem();
        }
        // `chats/<parent>/<id>.jsonl`: a subagent's chat.
        let parent = file
            .path
            .parent()
            .filter(|d| d.file_name().is_some_and(|n| n != "chats"))
            .and_then(|d| d.file_name())
            .map(crate::paths::os_key);
        let subagent = parent.is_some();
        if common.session.parent_id.is_none() {
            common.session.parent_id = parent;
        }
        if common.session.project.is_none() {
            common.session.project = project_dir(&file.path).and_then(project_root);
        }
        GeminiParser { subagent }
    }

    fn meta(&mut self, c: &mut Common, v: &Value, raw: &str) {
        if let Some(id) = str_field(v, "sessionId").filter(|s| !s.is_empty()) {
            c.session.id = id;
        }
        if c.session.header.is_none() {
            c.session.header = Some(raw.to_owned());
        }
        if v.get("kind").and_then(Value::as_str) == Some("subagent") {
            self.subagent = true;
        }
        if let Some(t) = parse_ts(v.get("startTime")) {
            c.session.created_at = Some(c.session.created_at.map_or(t, |x| x.min(t)));
        }
        self.set(c, v);
        if c.session.project.is_none() {
            c.session.project = v
                .pointer("/directories/0")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }

    /// Metadata fields a `$set` (or the first line) carries.
    fn set(&self, c: &mut Common, v: &Value) {
        if let Some(s) = str_field(v, "summary").filter(|s| !s.trim().is_empty()) {
            c.session.title = Some(s);
        }
        if let Some(t) = parse_ts(v.get("lastUpdated")) {
            c.session.updated_at = Some(c.session.updated_at.map_or(t, |x| x.max(t)));
        }
    }

    /// One message record as rows, replacing an earlier copy of the same id from this read.
    fn message(&self, c: &mut Common, line_no: u64, v: &Value, out: &mut FileBatch) {
        let Some(id) = str_field(v, "id").filter(|s| !s.is_empty()) else {
            return;
        };
        remove(out, &c.session.id, |m| m == id);
        let ts = c.touch(parse_ts(v.get("timestamp")));
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        let text = v.get("content").and_then(part_text);
        let role = match ty {
            "user" if text.as_deref().map(str::trim) == Some(CONTINUE) => Role::System,
            "user" => Role::User,
            // Some builds' older chats name the answer `model`.
            "gemini" | "model" => Role::Assistant,
            _ => Role::System,
        };
        let mut m = MessageRow {
            model: str_field(v, "model"),
            // Ids are the client's uuids, written in this session's file only.
            ..c.message(id, ts, role, self.source_agent(), line_no, Origin::Own)
        };
        if let Some(t) = v
            .get("tokens")
            .filter(|t| t.is_object() && role == Role::Assistant)
        {
            out.push_usage(usage(c, &m, t));
        }
        let mut parts = Vec::new();
        if role == Role::Assistant {
            for t in v
                .get("thoughts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let text = match (str_field(t, "subject"), str_field(t, "description")) {
                    (Some(s), Some(d)) => format!("{s}: {d}"),
                    (s, d) => s.or(d).unwrap_or_default(),
                };
                parts.push(PartRow::with_text(&m, 0, "thinking", Some(text)));
            }
        }
        if let Some(t) = &text {
            parts.push(PartRow::with_text(&m, 0, "text", Some(t.clone())));
        }
        m.search_text = match role {
            Role::User => join_search(vec![v
                .get("displayContent")
                .and_then(part_text)
                .or(text)
                .unwrap_or_default()]),
            Role::Assistant => join_search(vec![text.unwrap_or_default()]),
            _ => None,
        };
        for call in v
            .get("toolCalls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut p = PartRow::with_text(&m, 0, "tool_call", None);
            p.call_id = str_field(call, "id");
            p.tool_name = str_field(call, "name");
            p.body = call.get("args").map(Value::to_string);
            parts.push(p);
            let output = call
                .get("result")
                .and_then(result_text)
                .or_else(|| call.get("resultDisplay").and_then(part_text));
            let status = call.get("status").and_then(Value::as_str);
            if output.is_some() || status.is_some_and(|s| s != "success") {
                let mut r = PartRow::with_text(&m, 0, "tool_result", output);
                r.call_id = str_field(call, "id");
                r.tool_name = str_field(call, "name");
                r.is_error = status.map(|s| matches!(s, "error" | "cancelled"));
                parts.push(r);
            }
        }
        out.push_message(m, parts);
    }

    /// `$rewindTo`: the message and everything after it go (of what this read produced;
    /// a message it did not produce: all of it).
    fn rewind(&self, c: &Common, target: &str, out: &mut FileBatch) {
        let mine = |m: &MessageRow| m.session_id == c.session.id;
        let cut = out
            .messages
            .iter()
            .position(|m| mine(m) && m.id == target)
            .or_else(|| out.messages.iter().position(mine));
        if let Some(cut) = cut {
            let gone: std::collections::HashSet<String> = out.messages[cut..]
                .iter()
                .filter(|m| mine(m))
                .map(|m| m.id.clone())
                .collect();
            remove(out, &c.session.id, |m| gone.contains(m));
        }
    }
}

impl RecordParser for GeminiParser {
    fn source_agent(&self) -> &'static str {
        SOURCE.agent(self.subagent)
    }

    fn line(
        &mut self,
        c: &mut Common,
        line_no: u64,
        v: &Value,
        raw: &str,
        out: &mut FileBatch,
    ) -> Option<String> {
        if let Some(target) = v.get("$rewindTo") {
            if let Some(t) = target.as_str() {
                self.rewind(c, t, out);
            }
            return Some("$rewindTo".into());
        }
        if let Some(set) = v.get("$set") {
            self.set(c, set);
            // A checkpoint: the messages it lists are all there is.
            if let Some(list) = set.get("messages").and_then(Value::as_array) {
                remove(out, &c.session.id, |_| true);
                for m in list {
                    self.message(c, line_no, m, out);
                }
            }
            return Some("$set".into());
        }
        if v.get("id").is_some() {
            self.message(c, line_no, v, out);
            return Some(str_field(v, "type").unwrap_or_else(|| "message".into()));
        }
        if let (Some(_), Some(messages)) = (
            v.get("sessionId"),
            v.get("messages").and_then(Value::as_array),
        ) {
            // An older build's whole chat (`session-*.json`): the metadata line's fields
            // (kept as the header, without the messages) and every message.
            let header: serde_json::Map<String, Value> = v
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| *k != "messages")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let header = Value::Object(header);
            self.meta(c, &header, &header.to_string());
            for m in messages {
                self.message(c, line_no, m, out);
            }
            return Some("chat".into());
        }
        if v.get("sessionId").is_some() {
            self.meta(c, v, raw);
            return Some("metadata".into());
        }
        None
    }
}

/// An answer's `tokens {input, output, cached, thoughts, tool}`: Gemini counts cached
/// input inside `input` (taken out here) and thoughts apart from `output` (added to it:
/// both are billed as output); a tool's prompt tokens are input.
fn usage(c: &Common, m: &MessageRow, t: &Value) -> UsageRow {
    let cached = tokens(t, "cached");
    let thoughts = tokens(t, "thoughts");
    UsageRow {
        message_id: Some(m.id.clone()),
        model: m.model.clone(),
        input: tokens(t, "input")
            .saturating_sub(cached)
            .saturating_add(tokens(t, "tool")),
        output: tokens(t, "output").saturating_add(thoughts),
        cache_read: cached,
        reasoning: thoughts,
        ..c.usage_row(
            format!("{}:{}", m.session_id, m.id),
            m.timestamp,
            &m.source_agent,
            m.source_line,
        )
    }
}

/// Drop the messages of `session` whose id `gone` selects, with their parts (no copies
/// made: an answer replaced as its tool calls run makes this a per-message cost).
fn remove(out: &mut FileBatch, session: &str, gone: impl Fn(&str) -> bool) {
    let hit = |s: &str, id: &str| s == session && gone(id);
    // A usage row's key is `<session>:<message id>` (its session may be a parent's).
    out.usage.retain(|u| {
        !u.key
            .strip_prefix(session)
            .and_then(|k| k.strip_prefix(':'))
            .is_some_and(&gone)
    });
    if !out.messages.iter().any(|m| hit(&m.session_id, &m.id)) {
        return;
    }
    out.messages.retain(|m| !hit(&m.session_id, &m.id));
    out.parts.retain(|p| !hit(&p.session_id, &p.message_id));
}

/// A `PartListUnion`'s text: a string, a part (`{text}`), or a list of them.
fn part_text(v: &Value) -> Option<String> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(part_text)
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(_) => str_field(v, "text")?,
        _ => return None,
    };
    (!text.trim().is_empty()).then_some(text)
}

/// A tool call's result: its parts' text, or the output inside a `functionResponse`.
fn result_text(v: &Value) -> Option<String> {
    let items = match v {
        Value::Array(items) => items.as_slice(),
        other => std::slice::from_ref(other),
    };
    let texts: Vec<String> = items
        .iter()
        .filter_map(|p| {
            part_text(p).or_else(|| {
                let r = p.pointer("/functionResponse/response")?;
                r.get("output")
                    .or_else(|| r.get("error"))
                    .and_then(|o| o.as_str().map(str::to_owned))
                    .or_else(|| Some(r.to_string()))
            })
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_and_texts() {
        assert_eq!(
            part_text(&json!([{"text": "a"}, {"text": "b"}])).as_deref(),
            Some("a\nb")
        );
        assert_eq!(part_text(&json!("  ")), None);
        let r = json!([{"functionResponse": {"id": "t", "name": "ls", "response": {"output": "x.rs"}}}]);
        assert_eq!(result_text(&r).as_deref(), Some("x.rs"));
    }
}

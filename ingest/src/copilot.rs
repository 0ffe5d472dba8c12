//! GitHub Copilot CLI: `$COPILOT_HOME` or `~/.copilot`, one folder per session under
//! `session-state/` holding `events.jsonl` (older builds: a flat `session-state/<id>.jsonl`).
//! One event per line: `{type, data, id, timestamp, parentId}`.
//!
//! `user.message` and `assistant.message` become messages (id = the event's `id`): an
//! assistant message's `reasoningText` is a thinking part, its `content` the text, each of
//! its `toolRequests` a tool call. `tool.execution_complete` is a tool message, paired to
//! its call by `toolCallId`; a `tool.execution_start` whose call no assistant message
//! requested is a tool call of its own. `assistant.reasoning` is a thinking message unless
//! an assistant message already carried the same text. `session.start` names the session,
//! its working directory and model, `session.model_change` the model after it (the title is
//! the `name:` or `summary:` of the `workspace.yaml` beside the events, when there is one);
//! `session.error` and `session.warning` are system messages. Every other event (turn
//! markers, usage, compaction, shutdown metrics, rewinds) is kept as a record only.

use std::collections::{HashMap, HashSet};

use pond_rows::clients::{self, AGENT_COPILOT};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use crate::common::Common;
use crate::model::{FileBatch, MessageRow, Origin, PartRow, Role};
use crate::side::{read_side_file, SIDE_FILE_BYTES};
use crate::source::{RecordParser, Source, SourceFile};
use crate::text::{
    arguments_json, flatten_content, is_harness_text, join_search, parse_ts, str_field,
};

/// GitHub Copilot CLI: `$COPILOT_HOME` or `~/.copilot`, sessions under `session-state/`.
pub static SOURCE: Source = Source {
    client: &clients::COPILOT,
    layout: &["session-state"],
    transcript: crate::source::every_file,
    sniff,
    parser: |file, common| Box::new(CopilotParser::new(file, common)),
    database: None,
    replayed: false,
    documents: false,
    text: false,
};

/// An event envelope: a dotted `type` (`session.start`, `user.message`) and a `data` object.
fn sniff(v: &Value) -> bool {
    v.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.contains('.'))
        && v.get("data").is_some_and(Value::is_object)
}

pub struct CopilotParser {
    /// The model named last (`session.start`, `session.model_change`).
    model: Option<String>,
    /// `toolCallId` -> tool name, to name the results that follow.
    call_names: HashMap<String, String>,
    /// Calls an assistant message requested: their `tool.execution_start` adds nothing.
    requested: HashSet<String>,
    /// Reasoning texts already stored (hashes), so the same thinking is not stored twice.
    reasoning: HashSet<u64>,
}

/// The session's folder name for `<id>/events.jsonl`, else the file's stem.
fn id_from_path(file: &SourceFile) -> String {
    let stem = file.stem();
    if stem == "events" {
        if let Some(dir) = file.path.parent().and_then(|p| p.file_name()) {
            return crate::paths::os_key(dir);
        }
    }
    stem
}

/// The session's title from the `workspace.yaml` beside `events.jsonl`: its `name:`, else
/// its `summary:` (one-line values; quotes taken off).
fn workspace_title(file: &SourceFile) -> Option<String> {
    if file.stem() != "events" {
        return None;
    }
    let yaml = read_side_file(&file.path.parent()?.join("workspace.yaml"), SIDE_FILE_BYTES)?;
    let value = |key: &str| {
        yaml.lines().find_map(|l| {
            let v = l.strip_prefix(key)?.strip_prefix(':')?.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            (!v.is_empty()).then(|| v.to_owned())
        })
    };
    value("name").or_else(|| value("summary"))
}

impl CopilotParser {
    fn new(file: &SourceFile, common: &mut Common) -> Self {
        if common.session.id.is_empty() {
            common.session.id = id_from_path(file);
        }
        if common.session.title.is_none() {
            common.session.title = workspace_title(file);
        }
        CopilotParser {
            model: None,
            call_names: HashMap::new(),
            requested: HashSet::new(),
            reasoning: HashSet::new(),
        }
    }

    fn message(&self, c: &Common, line_no: u64, ts: i64, v: &Value, role: Role) -> MessageRow {
        let id = str_field(v, "id")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("{}:{line_no}", c.session.id));
        // Event ids are uuids written once: no other session replays them.
        c.message(id, ts, role, AGENT_COPILOT, line_no, Origin::Own)
    }

    fn start(&mut self, c: &mut Common, d: &Value, raw: &str) {
        if let Some(id) = str_field(d, "sessionId").filter(|s| !s.is_empty()) {
            c.session.id = id;
        }
        if c.session.header.is_none() {
            c.session.header = Some(raw.to_owned());
        }
        if let Some(cwd) = d.pointer("/context/cwd").and_then(Value::as_str) {
            c.session.project = Some(cwd.to_owned());
        }
        if let Some(t) = parse_ts(d.get("startTime")) {
            c.session.created_at = Some(c.session.created_at.map_or(t, |x| x.min(t)));
        }
        if let Some(m) = str_field(d, "selectedModel") {
            self.model = Some(m);
        }
    }

    /// A thinking text not stored yet: true once per text.
    fn fresh_reasoning(&mut self, text: &str) -> bool {
        self.reasoning.insert(xxh3_64(text.as_bytes()))
    }

    fn user(&self, c: &Common, line_no: u64, ts: i64, v: &Value, d: &Value, out: &mut FileBatch) {
        let mut m = self.message(c, line_no, ts, v, Role::User);
        if let Some(text) = str_field(d, "content") {
            // Skill bodies the client injects as user turns are not what the user typed.
            let injected = str_field(d, "source").is_some_and(|s| s.starts_with("skill-"))
                || text.trim_start().starts_with("<skill-context")
                || is_harness_text(&text);
            if !injected {
                m.search_text = join_search(vec![text.clone()]);
            }
            out.parts
                .push(PartRow::with_text(&m, 0, "text", Some(text)));
        }
        out.messages.push(m);
    }

    fn assistant(
        &mut self,
        c: &Common,
        line_no: u64,
        ts: i64,
        v: &Value,
        d: &Value,
        out: &mut FileBatch,
    ) {
        let mut m = self.message(c, line_no, ts, v, Role::Assistant);
        m.model = str_field(d, "model").or_else(|| self.model.clone());
        let mut parts = Vec::new();
        if let Some(r) = str_field(d, "reasoningText").filter(|r| !r.trim().is_empty()) {
            if self.fresh_reasoning(&r) {
                parts.push(PartRow::with_text(&m, 0, "thinking", Some(r)));
            }
        }
        if let Some(text) = str_field(d, "content").filter(|t| !t.is_empty()) {
            m.search_text = join_search(vec![text.clone()]);
            parts.push(PartRow::with_text(&m, 0, "text", Some(text)));
        }
        for call in d
            .get("toolRequests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut p = PartRow::with_text(&m, 0, "tool_call", None);
            p.call_id = str_field(call, "toolCallId");
            p.tool_name = str_field(call, "name");
            p.body = call.get("arguments").map(arguments_json);
            if let Some(id) = &p.call_id {
                self.requested.insert(id.clone());
                if let Some(name) = &p.tool_name {
                    self.call_names.insert(id.clone(), name.clone());
                }
            }
            parts.push(p);
        }
        out.push_message(m, parts);
    }

    /// A call no assistant message requested (older builds write no `toolRequests`).
    fn execution_start(
        &mut self,
        c: &Common,
        line_no: u64,
        ts: i64,
        v: &Value,
        d: &Value,
        out: &mut FileBatch,
    ) {
        let call_id = str_field(d, "toolCallId");
        let name = str_field(d, "toolName");
        if let (Some(id), Some(name)) = (&call_id, &name) {
            self.call_names
                .entry(id.clone())
                .or_insert_with(|| name.clone());
        }
        if call_id
            .as_ref()
            .is_some_and(|id| self.requested.contains(id))
        {
            return;
        }
        let mut m = self.message(c, line_no, ts, v, Role::Assistant);
        m.model = str_field(d, "model").or_else(|| self.model.clone());
        let mut p = PartRow::with_text(&m, 0, "tool_call", None);
        p.call_id = call_id;
        p.tool_name = name;
        p.body = d.get("arguments").map(arguments_json);
        out.push_message(m, vec![p]);
    }

    fn execution_complete(
        &self,
        c: &Common,
        line_no: u64,
        ts: i64,
        v: &Value,
        d: &Value,
        out: &mut FileBatch,
    ) {
        let m = self.message(c, line_no, ts, v, Role::Tool);
        let mut p = PartRow::with_text(&m, 0, "tool_result", None);
        p.call_id = str_field(d, "toolCallId");
        p.tool_name = str_field(d, "toolName").or_else(|| {
            p.call_id
                .as_ref()
                .and_then(|id| self.call_names.get(id).cloned())
        });
        p.text = match d.get("result") {
            Some(Value::Object(r)) => r.get("content").and_then(flatten_content),
            Some(other) => flatten_content(other),
            None => None,
        }
        .or_else(|| d.pointer("/error/message").and_then(flatten_content));
        // `success` is true for a shell command that exited non-zero: the output says so.
        p.is_error = d
            .get("success")
            .and_then(Value::as_bool)
            .map(|ok| !ok)
            .or(d.get("error").map(|_| true));
        out.push_message(m, vec![p]);
    }
}

impl RecordParser for CopilotParser {
    fn source_agent(&self) -> &'static str {
        AGENT_COPILOT
    }

    fn line(
        &mut self,
        c: &mut Common,
        line_no: u64,
        v: &Value,
        raw: &str,
        out: &mut FileBatch,
    ) -> Option<String> {
        let ty = v.get("type").and_then(Value::as_str)?;
        let ts = c.touch(parse_ts(v.get("timestamp")));
        let empty = Value::Null;
        let d = v.get("data").unwrap_or(&empty);
        match ty {
            "session.start" => self.start(c, d, raw),
            "session.resume" if c.session.project.is_none() => {
                c.session.project = d
                    .pointer("/context/cwd")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            "session.model_change" => {
                if let Some(m) = str_field(d, "newModel") {
                    self.model = Some(m);
                }
            }
            "user.message" => self.user(c, line_no, ts, v, d, out),
            "assistant.message" => self.assistant(c, line_no, ts, v, d, out),
            "assistant.reasoning" => {
                if let Some(r) = str_field(d, "content").filter(|r| !r.trim().is_empty()) {
                    if self.fresh_reasoning(&r) {
                        let mut m = self.message(c, line_no, ts, v, Role::Assistant);
                        m.model.clone_from(&self.model);
                        let p = PartRow::with_text(&m, 0, "thinking", Some(r));
                        out.push_message(m, vec![p]);
                    }
                }
            }
            "tool.execution_start" => self.execution_start(c, line_no, ts, v, d, out),
            "tool.execution_complete" => self.execution_complete(c, line_no, ts, v, d, out),
            "session.error" | "session.warning" => {
                let m = self.message(c, line_no, ts, v, Role::System);
                let text = str_field(d, "message").or_else(|| flatten_content(d));
                let p = PartRow::with_text(&m, 0, "text", text);
                out.push_message(m, vec![p]);
            }
            _ => {}
        }
        Some(ty.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn file(path: &str) -> SourceFile {
        SourceFile {
            path: PathBuf::from(path),
            kind: None,
            parent_session: None,
            is_subagent: false,
        }
    }

    #[test]
    fn ids_from_either_layout() {
        assert_eq!(
            id_from_path(&file("/h/session-state/abc/events.jsonl")),
            "abc"
        );
        assert_eq!(id_from_path(&file("/h/session-state/def.jsonl")), "def");
    }
}

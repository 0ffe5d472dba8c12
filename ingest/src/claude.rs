//! Claude Code transcripts: one file per session, one JSON record per line.
//!
//! `user`/`assistant` records with a `message` become messages (id = `uuid`), each content
//! block a part; a user record made only of `tool_result` blocks is a tool message. `system`
//! records become system messages. Titles come from `custom-title`, `ai-title` and 1.0.x
//! `summary` rows. Every other record type is kept verbatim as a record only.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::common::Common;
use crate::discover::SourceFile;
use crate::model::{
    FileBatch, MessageRow, Origin, PartRow, Role, AGENT_CLAUDE, AGENT_CLAUDE_SUBAGENT,
};
use crate::text::{flatten_content, is_harness_text, join_search, parse_ts, str_field};

pub struct ClaudeParser {
    subagent: bool,
    /// `tool_use.id` -> tool name, to name the tool results that follow.
    tool_names: HashMap<String, String>,
    custom_title: bool,
}

impl ClaudeParser {
    pub(crate) fn new(file: &SourceFile, common: &mut Common) -> Self {
        if common.session.id.is_empty() {
            // One file is one session: its id is the file's stem (`<uuid>`, `agent-<id>`).
            common.session.id = file
                .path
                .file_stem()
                .map(crate::paths::os_key)
                .unwrap_or_default();
        }
        if common.session.parent_id.is_none() {
            common.session.parent_id.clone_from(&file.parent_session);
        }
        ClaudeParser {
            subagent: file.is_subagent,
            tool_names: HashMap::new(),
            custom_title: false,
        }
    }

    pub fn source_agent(&self) -> &'static str {
        if self.subagent {
            AGENT_CLAUDE_SUBAGENT
        } else {
            AGENT_CLAUDE
        }
    }

    /// Handle one record; returns its record type.
    pub(crate) fn line(
        &mut self,
        c: &mut Common,
        line_no: u64,
        v: &Value,
        raw: &str,
        out: &mut FileBatch,
    ) -> Option<String> {
        let ty = v.get("type").and_then(Value::as_str);
        let ts = c.touch(parse_ts(v.get("timestamp")));
        if c.session.header.is_none() && line_no == 1 {
            c.session.header = Some(raw.to_owned());
        }
        if c.session.project.is_none() {
            c.session.project = str_field(v, "cwd").filter(|s| !s.is_empty());
        }
        if self.subagent && c.session.parent_id.is_none() {
            c.session.parent_id = str_field(v, "sessionId");
        }
        match ty {
            Some("user" | "assistant") => {
                if let Some(msg) = v.get("message") {
                    self.message(c, line_no, ts, v, msg, out);
                }
            }
            Some("system") => self.system(c, line_no, ts, v, out),
            Some("custom-title") => {
                if let Some(t) = str_field(v, "customTitle") {
                    c.session.title = Some(t);
                    self.custom_title = true;
                }
            }
            Some("ai-title") if !self.custom_title => {
                if let Some(t) = str_field(v, "aiTitle") {
                    c.session.title = Some(t);
                }
            }
            Some("summary") if !self.custom_title => {
                if let Some(t) = str_field(v, "summary") {
                    c.session.title = Some(t);
                }
            }
            _ => {}
        }
        ty.map(str::to_owned)
    }

    fn message_row(&self, c: &Common, line_no: u64, ts: i64, v: &Value, role: Role) -> MessageRow {
        let id = str_field(v, "uuid").unwrap_or_else(|| format!("{}:{line_no}", c.session.id));
        let origin = if v.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            Origin::Sidechain
        } else if v
            .get("sessionId")
            .and_then(Value::as_str)
            .is_some_and(|s| s != c.session.id)
        {
            Origin::Copied
        } else {
            Origin::Own
        };
        MessageRow {
            session_id: c.session.id.clone(),
            id,
            timestamp: ts,
            role,
            source_agent: self.source_agent().to_owned(),
            project: c.session.project.clone(),
            search_text: None,
            model: None,
            source_path: c.path.clone(),
            source_line: line_no,
            origin,
        }
    }

    fn system(&self, c: &Common, line_no: u64, ts: i64, v: &Value, out: &mut FileBatch) {
        let mut m = self.message_row(c, line_no, ts, v, Role::System);
        let text = v.get("content").and_then(flatten_content);
        out.parts.push(PartRow {
            session_id: m.session_id.clone(),
            message_id: m.id.clone(),
            source_line: m.source_line,
            ordinal: 0,
            part_type: "text".into(),
            tool_name: None,
            call_id: None,
            is_error: None,
            text,
            body: v
                .get("subtype")
                .map(|s| json!({ "subtype": s }).to_string()),
        });
        m.search_text = None;
        out.messages.push(m);
    }

    fn message(
        &mut self,
        c: &Common,
        line_no: u64,
        ts: i64,
        v: &Value,
        msg: &Value,
        out: &mut FileBatch,
    ) {
        let is_assistant = v.get("type").and_then(Value::as_str) == Some("assistant");
        let harness_row = v.get("isMeta").and_then(Value::as_bool) == Some(true);
        let compact = v.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
        let content = msg.get("content").unwrap_or(&Value::Null);
        let blocks: Vec<Value> = match content {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            Value::Null => Vec::new(),
            other => vec![json!({"type": "text", "text": other.to_string()})],
        };
        let all_results = !blocks.is_empty()
            && blocks
                .iter()
                .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
        let role = if is_assistant {
            Role::Assistant
        } else if compact {
            Role::System
        } else if all_results {
            Role::Tool
        } else {
            Role::User
        };
        let mut m = self.message_row(c, line_no, ts, v, role);
        m.model = str_field(msg, "model");
        let searchable = matches!(role, Role::User | Role::Assistant) && !harness_row;
        let mut fragments = Vec::new();
        for (ordinal, block) in blocks.iter().enumerate() {
            let part = self.part(&m, ordinal as u32, block);
            if searchable && part.part_type == "text" {
                if let Some(t) = &part.text {
                    if is_assistant || !is_harness_text(t) {
                        fragments.push(t.clone());
                    }
                }
            }
            out.parts.push(part);
        }
        m.search_text = join_search(fragments);
        out.messages.push(m);
    }

    fn part(&mut self, m: &MessageRow, ordinal: u32, b: &Value) -> PartRow {
        let ty = b.get("type").and_then(Value::as_str).unwrap_or("unknown");
        let mut p = PartRow {
            session_id: m.session_id.clone(),
            message_id: m.id.clone(),
            source_line: m.source_line,
            ordinal,
            part_type: ty.to_owned(),
            tool_name: None,
            call_id: None,
            is_error: None,
            text: None,
            body: None,
        };
        match ty {
            "text" => p.text = str_field(b, "text"),
            "thinking" => p.text = str_field(b, "thinking"),
            "tool_use" | "server_tool_use" => {
                p.part_type = "tool_call".into();
                p.tool_name = str_field(b, "name");
                p.call_id = str_field(b, "id");
                p.body = b.get("input").map(Value::to_string);
                if let (Some(id), Some(name)) = (&p.call_id, &p.tool_name) {
                    self.tool_names.insert(id.clone(), name.clone());
                }
            }
            "tool_result" => {
                p.call_id = str_field(b, "tool_use_id");
                p.tool_name = p
                    .call_id
                    .as_ref()
                    .and_then(|id| self.tool_names.get(id).cloned());
                p.is_error = b.get("is_error").and_then(Value::as_bool);
                p.text = b.get("content").and_then(flatten_content);
            }
            "image" => {
                let src = b.get("source");
                let data_len = src
                    .and_then(|s| s.get("data"))
                    .and_then(Value::as_str)
                    .map_or(0, str::len);
                p.body = Some(
                    json!({
                        "media_type": src.and_then(|s| s.get("media_type")),
                        "source_type": src.and_then(|s| s.get("type")),
                        "data_bytes": data_len,
                    })
                    .to_string(),
                );
            }
            _ => p.body = Some(b.to_string()),
        }
        p
    }
}

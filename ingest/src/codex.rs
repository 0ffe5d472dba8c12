//! Codex CLI rollouts, current (`{timestamp, type, payload}` envelopes) and legacy (a bare
//! `{id, timestamp, instructions, git}` first line, then bare response items).
//!
//! `response_item`s become messages (id = `<session-id>:<line>`): `message` (user, assistant,
//! developer as system), `reasoning` (thinking), tool calls and their outputs (tool role).
//! `event_msg` rows repeat what the response items say (the user's text appears in both),
//! so they are kept as records only, as are `turn_context`, `compacted` and unknown types.

use std::collections::HashMap;

use pond_rows::clients::{self, AGENT_CODEX};
use serde_json::{json, Value};

use crate::common::Common;
use crate::model::{tokens, FileBatch, MessageRow, Origin, PartRow, Role, UsageRow};
use crate::source::{RecordParser, Source, SourceFile};
use crate::text::{
    arguments_json, flatten_content, is_harness_text, join_search, parse_ts, str_field,
};

/// Codex CLI: `$CODEX_HOME` or `~/.codex`, rollouts under `sessions/` and
/// `archived_sessions/`.
pub static SOURCE: Source = Source {
    client: &clients::CODEX,
    layout: &["sessions", "archived_sessions"],
    transcript: crate::source::every_file,
    sniff,
    parser: |file, common| Box::new(CodexParser::new(file, common)),
    database: None,
    replayed: false,
    documents: false,
    text: false,
};

/// A current envelope (`{type, payload}`), or a legacy header (`{id, instructions|git}`).
fn sniff(v: &Value) -> bool {
    let has = |k: &str| v.get(k).is_some();
    (has("payload") && v.get("type").is_some_and(Value::is_string))
        || (has("id") && (has("instructions") || has("git")) && !has("type"))
}

pub struct CodexParser {
    /// `call_id` -> tool name, to name the outputs that follow.
    call_names: HashMap<String, String>,
    /// Whether the session's identity is settled (by a first meta, or by an earlier pass
    /// over this file): later metas are a fork's or resume's copy of its origin's.
    identified: bool,
}

/// The session uuid at the end of `rollout-<local time>-<uuid>.jsonl`, else the stem.
fn id_from_file_name(file: &SourceFile) -> String {
    let stem = file.stem();
    // The tail is sliced by bytes: a name with other characters before it may not have a
    // char boundary there, and then it has no uuid tail either.
    if let Some(tail) = stem.len().checked_sub(36).and_then(|at| stem.get(at..)) {
        if tail.chars().filter(|&c| c == '-').count() == 4
            && tail.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
        {
            return tail.to_owned();
        }
    }
    stem
}

impl CodexParser {
    pub(crate) fn new(file: &SourceFile, common: &mut Common) -> Self {
        let identified = !common.session.id.is_empty();
        if !identified {
            common.session.id = id_from_file_name(file);
        }
        CodexParser {
            call_names: HashMap::new(),
            identified,
        }
    }
}

impl RecordParser for CodexParser {
    fn source_agent(&self) -> &'static str {
        AGENT_CODEX
    }

    fn line(
        &mut self,
        c: &mut Common,
        line_no: u64,
        v: &Value,
        raw: &str,
        out: &mut FileBatch,
    ) -> Option<String> {
        let ty = v.get("type").and_then(Value::as_str);
        match (ty, v.get("payload")) {
            (Some(ty), Some(p)) if p.is_object() => {
                let ts = c.touch(parse_ts(v.get("timestamp")).or(parse_ts(p.get("timestamp"))));
                let inner = p.get("type").and_then(Value::as_str);
                match ty {
                    "session_meta" => self.meta(c, p, raw),
                    "turn_context" => {
                        if c.session.project.is_none() {
                            c.session.project = str_field(p, "cwd");
                        }
                        if let Some(model) = str_field(p, "model") {
                            c.model = Some(model);
                        }
                    }
                    "response_item" => self.item(c, line_no, ts, p, out),
                    "event_msg" if inner == Some("token_count") => {
                        if let Some(u) = token_count(c, line_no, ts, p) {
                            out.push_usage(u);
                        }
                    }
                    _ => {}
                }
                Some(match inner {
                    Some(i) => format!("{ty}/{i}"),
                    None => ty.to_owned(),
                })
            }
            _ if line_no == 1 && ty.is_none() && v.get("id").is_some() => {
                // Legacy header.
                c.touch(parse_ts(v.get("timestamp")));
                self.meta(c, v, raw);
                Some("session_meta".into())
            }
            _ if v.get("record_type").is_some() => v
                .get("record_type")
                .and_then(Value::as_str)
                .map(str::to_owned),
            (Some(ty), _) => {
                // Legacy bare response item.
                let ts = c.touch(parse_ts(v.get("timestamp")));
                self.item(c, line_no, ts, v, out);
                Some(ty.to_owned())
            }
            (None, _) => None,
        }
    }
}

/// A `token_count` event's tokens for its turn: `info.last_token_usage` (the
/// cumulative `info.total_token_usage` is never a turn's). Codex writes a turn's count
/// again (a rate-limit update repeats the last info): a count whose cumulative total is
/// the one before is that repeat, not counted. `info: null` carries rate limits only;
/// older builds' `info {prompt, completion}` say neither what was cached nor whether
/// they are per turn, so they are not counted. Codex's input includes its cached input:
/// `input` here is the rest.
fn token_count(c: &mut Common, line_no: u64, ts: i64, p: &Value) -> Option<UsageRow> {
    let info = p.get("info").filter(|i| i.is_object())?;
    let last = info.get("last_token_usage").filter(|l| l.is_object())?;
    let total = info
        .pointer("/total_token_usage/total_tokens")
        .and_then(Value::as_u64);
    if total.is_some() && total == c.usage_total {
        return None;
    }
    c.usage_total = total.or(c.usage_total);
    let cached = tokens(last, "cached_input_tokens");
    Some(UsageRow {
        model: c.model.clone(),
        input: tokens(last, "input_tokens").saturating_sub(cached),
        output: tokens(last, "output_tokens"),
        cache_write: tokens(last, "cache_write_input_tokens"),
        cache_read: cached,
        reasoning: tokens(last, "reasoning_output_tokens"),
        ..c.usage_row(
            format!("{}:{line_no}", c.session.id),
            ts,
            AGENT_CODEX,
            line_no,
        )
    })
}

impl CodexParser {
    fn meta(&mut self, c: &mut Common, p: &Value, raw: &str) {
        // A forked or resumed rollout repeats the meta of its origin: the first one wins.
        if self.identified {
            return;
        }
        self.identified = true;
        if let Some(id) = str_field(p, "id").filter(|s| !s.is_empty()) {
            c.session.id = id;
        }
        c.session.header = Some(raw.to_owned());
        if let Some(cwd) = str_field(p, "cwd") {
            c.session.project = Some(cwd);
        }
        if let Some(t) = parse_ts(p.get("timestamp")) {
            c.session.created_at = Some(c.session.created_at.map_or(t, |x| x.min(t)));
        }
        c.session.parent_id = c
            .session
            .parent_id
            .take()
            .or(str_field(p, "forked_from_id"));
    }

    fn new_message(&self, c: &Common, line_no: u64, ts: i64, role: Role) -> MessageRow {
        let id = format!("{}:{line_no}", c.session.id);
        // Ids are `<session>:<line>`: no other session holds them.
        c.message(id, ts, role, AGENT_CODEX, line_no, Origin::Own)
    }

    fn item(&mut self, c: &Common, line_no: u64, ts: i64, p: &Value, out: &mut FileBatch) {
        let Some(kind) = p.get("type").and_then(Value::as_str) else {
            return;
        };
        let part = PartRow::of;
        match kind {
            "message" => {
                let role = match p.get("role").and_then(Value::as_str) {
                    Some("user") => Role::User,
                    Some("assistant") => Role::Assistant,
                    _ => Role::System,
                };
                let mut m = self.new_message(c, line_no, ts, role);
                let mut fragments = Vec::new();
                let items = p
                    .get("content")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for (i, item) in items.iter().enumerate() {
                    let ity = item
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown");
                    let mut pr = part(&m, i as u32, "text");
                    match ity {
                        "input_text" | "output_text" | "text" => {
                            pr.text = str_field(item, "text");
                            if let Some(t) = &pr.text {
                                let conversational = match role {
                                    Role::User => !is_harness_text(t),
                                    Role::Assistant => true,
                                    _ => false,
                                };
                                if conversational {
                                    fragments.push(t.clone());
                                }
                            }
                        }
                        "input_image" => {
                            pr.part_type = "image".into();
                            let url_len = item
                                .get("image_url")
                                .and_then(Value::as_str)
                                .map_or(0, str::len);
                            pr.body = Some(json!({ "image_url_bytes": url_len }).to_string());
                        }
                        other => {
                            pr.part_type = other.to_owned();
                            pr.body = Some(item.to_string());
                        }
                    }
                    out.parts.push(pr);
                }
                m.search_text = join_search(fragments);
                out.messages.push(m);
            }
            "reasoning" => {
                let m = self.new_message(c, line_no, ts, Role::Assistant);
                let mut pr = part(&m, 0, "thinking");
                let summary: Vec<String> = p
                    .get("summary")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|s| str_field(s, "text")).collect())
                    .unwrap_or_default();
                pr.text = (!summary.is_empty()).then(|| summary.join("\n"));
                out.parts.push(pr);
                out.messages.push(m);
            }
            "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call"
            | "tool_search_call" => {
                let m = self.new_message(c, line_no, ts, Role::Assistant);
                let mut pr = part(&m, 0, "tool_call");
                pr.tool_name = str_field(p, "name")
                    .or_else(|| Some(kind.trim_end_matches("_call").to_owned()));
                pr.call_id = str_field(p, "call_id").or_else(|| str_field(p, "id"));
                let input = p
                    .get("arguments")
                    .or_else(|| p.get("input"))
                    .or_else(|| p.get("action"));
                pr.body = input.map(arguments_json);
                if let (Some(id), Some(name)) = (&pr.call_id, &pr.tool_name) {
                    self.call_names.insert(id.clone(), name.clone());
                }
                out.parts.push(pr);
                out.messages.push(m);
            }
            "function_call_output"
            | "custom_tool_call_output"
            | "local_shell_call_output"
            | "tool_search_output" => {
                let m = self.new_message(c, line_no, ts, Role::Tool);
                let mut pr = part(&m, 0, "tool_result");
                pr.call_id = str_field(p, "call_id");
                pr.tool_name = pr
                    .call_id
                    .as_ref()
                    .and_then(|id| self.call_names.get(id).cloned());
                let output = p.get("output").unwrap_or(&Value::Null);
                // Older builds wrap the output as `{"output": "...", "metadata": {exit_code}}`.
                let (text, exit) = match output {
                    Value::String(s) => match serde_json::from_str::<Value>(s) {
                        Ok(v) if v.get("output").is_some() => (
                            v.get("output").and_then(flatten_content),
                            v.pointer("/metadata/exit_code").and_then(Value::as_i64),
                        ),
                        _ => (Some(s.clone()), None),
                    },
                    other => (flatten_content(other), None),
                };
                pr.text = text;
                pr.is_error = exit.map(|code| code != 0);
                out.parts.push(pr);
                out.messages.push(m);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str) -> SourceFile {
        SourceFile {
            path: std::path::PathBuf::from(format!("/x/{name}")),
            kind: None,
            parent_session: None,
            is_subagent: false,
        }
    }

    #[test]
    fn ids_from_any_file_name() {
        let uuid = "019d688b-3b5f-72c0-8028-4a4af562b9f5";
        assert_eq!(
            id_from_file_name(&file(&format!("rollout-2026-04-07T23-24-08-{uuid}.jsonl"))),
            uuid
        );
        for odd in [
            "rollout-é.jsonl",
            "rollout-ééééééééééééééééééééééééééééééé.jsonl",
            "日本語のファイル名です日本語のファイル名です.jsonl",
            "r.jsonl",
        ] {
            let id = id_from_file_name(&file(odd));
            assert_eq!(id, odd.trim_end_matches(".jsonl"));
        }
    }
}

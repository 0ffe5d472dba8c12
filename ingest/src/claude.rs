//! Claude Code transcripts: one file per session, one JSON record per line.
//!
//! `user`/`assistant` records with a `message` become messages (id = `uuid`), each content
//! block a part; a user record made only of `tool_result` blocks is a tool message. `system`
//! records become system messages. Titles come from `custom-title`, `ai-title` and 1.0.x
//! `summary` rows. Every other record type is kept verbatim as a record only.

use pond_rows::clients;
use serde_json::{json, Value};

use crate::blocks::{all_results, content_blocks, Blocks};
use crate::common::Common;
use crate::model::{tokens, FileBatch, MessageRow, Origin, PartRow, Role, UsageRow};
use crate::source::{RecordParser, Source, SourceFile};
use crate::text::{flatten_content, is_harness_text, join_search, parse_ts, str_field};

/// Claude Code: `$CLAUDE_CONFIG_DIR` or `~/.claude`, sessions under `projects/`.
pub static SOURCE: Source = Source {
    client: &clients::CLAUDE_CODE,
    layout: &["projects"],
    transcript: crate::source::every_file,
    sniff,
    parser: |file, common| Box::new(ClaudeParser::new(file, common)),
    database: None,
    replayed: false,
    documents: false,
    text: false,
};

/// Claude Code's message links (`uuid`, `parentUuid`, `leafUuid`), or a typed record of a
/// session (`sessionId` with `type`: Gemini CLI's metadata line has a `sessionId` too).
fn sniff(v: &Value) -> bool {
    let has = |k: &str| v.get(k).is_some();
    has("uuid") || has("parentUuid") || has("leafUuid") || (has("sessionId") && has("type"))
}

pub struct ClaudeParser {
    subagent: bool,
    blocks: Blocks,
    custom_title: bool,
}

impl ClaudeParser {
    pub(crate) fn new(file: &SourceFile, common: &mut Common) -> Self {
        if common.session.id.is_empty() {
            // One file is one session: its id is the file's stem (`<uuid>`, `agent-<id>`).
            common.session.id = file.stem();
        }
        if common.session.parent_id.is_none() {
            common.session.parent_id.clone_from(&file.parent_session);
        }
        ClaudeParser {
            subagent: file.is_subagent,
            blocks: Blocks::default(),
            custom_title: false,
        }
    }
}

impl RecordParser for ClaudeParser {
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
        if let Some(u) = self.usage(c, line_no, v) {
            out.push_usage(u);
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
}

impl ClaudeParser {
    /// The token counts of a line whose `message` has a `usage` with input and output
    /// counts, and a timestamp: the lines ccusage reads, whatever their type. One API
    /// response is written as several lines sharing `message.id` and `requestId`, each
    /// with a `usage` (the first lines' output count may be partial): they share one key,
    /// so the first line of it is the one counted, as ccusage counts it. Without both ids,
    /// the key is the line's `uuid`, which a replayed copy of the line keeps.
    fn usage(&self, c: &Common, line_no: u64, v: &Value) -> Option<UsageRow> {
        let msg = v.get("message")?;
        let usage = msg.get("usage")?;
        let counted = |k: &str| usage.get(k).is_some_and(Value::is_number);
        if !counted("input_tokens") || !counted("output_tokens") {
            return None;
        }
        let ts = parse_ts(v.get("timestamp"))?;
        let request_id = str_field(v, "requestId");
        let uuid = str_field(v, "uuid");
        let key = match (str_field(msg, "id"), &request_id, &uuid) {
            (Some(m), Some(r), _) => format!("{m}:{r}"),
            (_, _, Some(u)) => u.clone(),
            _ => format!("{}:{line_no}", c.path),
        };
        Some(UsageRow {
            message_id: uuid,
            model: str_field(msg, "model"),
            request_id,
            input: tokens(usage, "input_tokens"),
            output: tokens(usage, "output_tokens"),
            cache_write: tokens(usage, "cache_creation_input_tokens"),
            cache_read: tokens(usage, "cache_read_input_tokens"),
            // Claude Code's lines of old wrote their cost.
            cost_usd: v.get("costUSD").and_then(Value::as_f64),
            ..c.usage_row(key, ts, self.source_agent(), line_no)
        })
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
        c.message(id, ts, role, self.source_agent(), line_no, origin)
    }

    fn system(&self, c: &Common, line_no: u64, ts: i64, v: &Value, out: &mut FileBatch) {
        let mut m = self.message_row(c, line_no, ts, v, Role::System);
        let text = v.get("content").and_then(flatten_content);
        out.parts.push(PartRow {
            text,
            body: v
                .get("subtype")
                .map(|s| json!({ "subtype": s }).to_string()),
            ..PartRow::of(&m, 0, "text")
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
        let blocks = content_blocks(content);
        let role = if is_assistant {
            Role::Assistant
        } else if compact {
            Role::System
        } else if all_results(&blocks) {
            Role::Tool
        } else {
            Role::User
        };
        let mut m = self.message_row(c, line_no, ts, v, role);
        m.model = str_field(msg, "model");
        let searchable = matches!(role, Role::User | Role::Assistant) && !harness_row;
        let mut fragments = Vec::new();
        for (ordinal, block) in blocks.iter().enumerate() {
            let part = self.blocks.part(&m, ordinal as u32, block);
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
}

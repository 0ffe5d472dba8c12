//! Content blocks in Anthropic's shape (`text`, `thinking`, `tool_use`, `tool_result`,
//! `image`), as Claude Code writes them and Cursor's agent transcripts copy them.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::model::{MessageRow, PartRow};
use crate::text::{flatten_content, str_field};

/// A message's `content` as blocks: a string is one text block.
pub(crate) fn content_blocks(content: &Value) -> Vec<Value> {
    match content {
        Value::String(s) => vec![json!({"type": "text", "text": s})],
        Value::Array(a) => a.clone(),
        Value::Null => Vec::new(),
        other => vec![json!({"type": "text", "text": other.to_string()})],
    }
}

/// Whether every block is a tool result (a user turn that only hands results back).
pub(crate) fn all_results(blocks: &[Value]) -> bool {
    !blocks.is_empty()
        && blocks
            .iter()
            .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
}

/// Blocks to parts over one pass of a file: remembers each call's tool name, so a result
/// that follows its call is named.
#[derive(Default)]
pub(crate) struct Blocks {
    /// `tool_use.id` -> tool name.
    tool_names: HashMap<String, String>,
}

impl Blocks {
    /// One content block of `m` as a part.
    pub(crate) fn part(&mut self, m: &MessageRow, ordinal: u32, b: &Value) -> PartRow {
        let ty = b.get("type").and_then(Value::as_str).unwrap_or("unknown");
        let mut p = PartRow::of(m, ordinal, ty);
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

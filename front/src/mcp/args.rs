//! The MCP tools: their names and descriptions, their JSON schemas (from the operations'
//! parameter structs, [`crate::params`]), and how a call's arguments are read (a mistake is
//! a sentence naming the accepted arguments).

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::params::{
    GetMessageParams, GetSessionParams, SearchParams, SessionsParams, SqlParams, UsageParams,
};

pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: fn() -> JsonObject,
}

fn schema_of<T: JsonSchema>() -> JsonObject {
    let v = serde_json::to_value(schemars::schema_for!(T)).expect("schema is JSON");
    match v {
        serde_json::Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

pub const TOOLS: [ToolSpec; 6] = [
    ToolSpec {
        name: "pond_search",
        description: "Search past agent sessions by words (BM25 full-text; `\"phrase\"`, `-word`, `a OR b`, `prefix*`, `word~`, `project:`/`client:`/`after:` filters in the query; `mode` vector or hybrid for meaning). Use it first to find when and where something was discussed or done: an error message, a function name, a decision. Returns hits grouped by session with a snippet, role, time, project and message id; follow up with pond_get_message (one hit in full) or pond_get_session (the whole conversation).",
        schema: schema_of::<SearchParams>,
    },
    ToolSpec {
        name: "pond_sessions",
        description: "List past agent sessions, newest first: each with its title (the client's, else its first prompt), client, project, first and last message time, message count, size and id. Filter by project, source_agent and dates, e.g. what was done in one project last week, in one call; page with offset. Read one with pond_get_session.",
        schema: schema_of::<SessionsParams>,
    },
    ToolSpec {
        name: "pond_get_session",
        description: "Read one session's messages in order, a page at a time (from the start or the end; continue with after/before a message id). Use it to reread a whole conversation found by pond_search.",
        schema: schema_of::<GetSessionParams>,
    },
    ToolSpec {
        name: "pond_get_message",
        description: "Show one message in full (text, thinking, tool calls and results) with the messages around it. Use it to read a search hit in context.",
        schema: schema_of::<GetMessageParams>,
    },
    ToolSpec {
        name: "pond_sql",
        description: "Run one read-only SQL SELECT over the archive (tables sessions, messages, parts, records, files; DataFusion dialect). Use it for counts, lists and aggregates that search cannot answer, e.g. sessions per project or the tools that failed most. Read the pond://schema resource for columns and examples. Capped by rows, bytes and a timeout.",
        schema: schema_of::<SqlParams>,
    },
    ToolSpec {
        name: "pond_usage",
        description: "Tokens and cost of past agent sessions, from the token counts each client recorded (Claude Code, Codex, Gemini CLI, OpenCode): per day (default), week, month, session, model, project or client, with totals, e.g. how much one project cost last week. Cost is what the client recorded, else computed from a dated price table; a model without a price says \"no price\".",
        schema: schema_of::<UsageParams>,
    },
];

pub fn tool_list() -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|t| {
            Tool::new(t.name, t.description, (t.schema)()).with_annotations(
                ToolAnnotations::new()
                    .read_only(true)
                    .destructive(false)
                    .idempotent(true)
                    .open_world(false),
            )
        })
        .collect()
}

/// Read a tool's arguments; a mistake names the arguments the tool accepts.
pub fn parse<T: DeserializeOwned>(tool: &str, args: Option<JsonObject>) -> Result<T, String> {
    let value = serde_json::Value::Object(args.unwrap_or_default());
    serde_json::from_value(value).map_err(|e| {
        let accepted = TOOLS
            .iter()
            .find(|t| t.name == tool)
            .map(|t| {
                let schema = (t.schema)();
                schema
                    .get("properties")
                    .and_then(|p| p.as_object())
                    .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        format!("invalid arguments for {tool}: {e}. Accepted arguments: {accepted}.")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pond_store::search::{SearchMode, SortBy};

    #[test]
    fn every_tool_has_an_object_schema_with_documented_properties() {
        for t in tool_list() {
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
            let props = t.input_schema["properties"].as_object().unwrap();
            for (name, p) in props {
                assert!(
                    p.get("description").is_some(),
                    "{}.{name} has no description: {p}",
                    t.name
                );
            }
        }
    }

    #[test]
    fn choices_are_listed_by_name_and_read_by_name() {
        let search = &tool_list()[0];
        let defs = &search.input_schema["$defs"];
        assert_eq!(
            defs["Mode"]["enum"],
            serde_json::json!(["fts", "vector", "hybrid", "exact", "regex"])
        );
        assert_eq!(
            defs["Sort"]["enum"],
            serde_json::json!(["relevance", "recency"])
        );
        let a: SearchParams = parse(
            "pond_search",
            serde_json::json!({"query": "x", "mode": "hybrid", "sort_by": "recency"})
                .as_object()
                .cloned(),
        )
        .unwrap();
        assert_eq!(
            (a.mode, a.sort_by),
            (Some(SearchMode::Hybrid), Some(SortBy::Recency))
        );
        let e = parse::<SqlParams>(
            "pond_sql",
            serde_json::json!({"query": "x", "format": "yaml"})
                .as_object()
                .cloned(),
        )
        .unwrap_err();
        assert!(e.contains("`table`, `json`, `csv`"), "{e}");
    }

    #[test]
    fn counts_may_be_numbers_or_numeric_strings() {
        let args = |v: serde_json::Value| v.as_object().cloned();
        let a: SearchParams = parse(
            "pond_search",
            args(serde_json::json!({"query": "x", "limit": "7"})),
        )
        .unwrap();
        assert_eq!(a.limit, Some(7));
        let a: SearchParams = parse(
            "pond_search",
            args(serde_json::json!({"query": "x", "limit": 7})),
        )
        .unwrap();
        assert_eq!(a.limit, Some(7));
        let e = parse::<SearchParams>(
            "pond_search",
            args(serde_json::json!({"query": "x", "limit": -1})),
        )
        .unwrap_err();
        assert!(e.contains("Accepted arguments"), "{e}");
        let e = parse::<SqlParams>("pond_sql", None).unwrap_err();
        assert!(e.contains("missing field `query`"), "{e}");
    }
}

//! The MCP tools' arguments, their JSON schemas and descriptions, and how a call's
//! arguments are read (a mistake is a sentence naming the accepted arguments).

use std::borrow::Cow;
use std::marker::PhantomData;

use pond_protocol::usage::UsageGroup;
use pond_protocol::{Choice, Format};
use pond_store::get::PageFrom;
use pond_store::search::{SearchMode, SortBy};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// The schema of a [`Choice`] enum: a string, one of its names. A field of such a type
/// carries no `serde(default)` (a missing `Option` is `None` anyway): with it, schemars
/// would add `"default": null` to the tool's schema.
pub struct Named<T>(PhantomData<T>);

impl<T: Choice> JsonSchema for Named<T> {
    fn schema_name() -> Cow<'static, str> {
        T::SCHEMA_NAME.into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = T::NAMES.iter().map(|(n, _)| *n).collect();
        schemars::json_schema!({"type": "string", "enum": names})
    }
}

/// Accepts a count as a number or as a numeric string ("10"), which some clients send.
mod lenient {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrText {
        Num(u64),
        Text(String),
    }

    pub fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Option::<NumOrText>::deserialize(d)? {
            None => Ok(None),
            Some(NumOrText::Num(n)) => Ok(Some(n)),
            Some(NumOrText::Text(s)) => s.trim().parse().map(Some).map_err(|_| {
                serde::de::Error::custom(format!("expected a whole number, got {s:?}"))
            }),
        }
    }
}

/// pond_search arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words to look for, all of them (stemmed, case- and accent-insensitive; a query that
    /// finds nothing is loosened to any of its words, and the answer says so). Syntax:
    /// "exact phrase", -word or NOT word (exclude), a OR b, prefix*, word~ (spellings within
    /// two edits), and filters in the text: project:NAME client:NAME role:user session:ID
    /// after:DATE before:DATE (DATE: YYYY-MM-DD, yesterday, 3d, 2w). With mode `exact` or
    /// `regex`: the text or regular expression as it is (no syntax, no inline filters).
    pub query: String,
    /// `fts` (full-text, the default): exact words. `vector`: meaning, for paraphrases and
    /// concepts when you do not know the words used. `hybrid`: both, fused. `vector` and
    /// `hybrid` need the store's embedding model (`pond model fetch`, then `pond embed`).
    /// `exact`: the text as it is, anywhere in a message, tool calls and tool results too:
    /// identifiers, paths, error codes, hashes (e.g. ERR_PNPM_OUTDATED_LOCKFILE,
    /// src/a.rs:240); any case unless `case_sensitive`. `regex`: a regular expression (Rust
    /// regex syntax; `(?i)` for any case) that holds a literal of 3+ letters or digits, or a
    /// narrow scope. Both list the newest matches first, with the matching line.
    #[schemars(with = "Option<Named<SearchMode>>")]
    pub mode: Option<SearchMode>,
    /// `exact` only: match case (default false: any case).
    #[serde(default)]
    pub case_sensitive: Option<bool>,
    /// `exact` and `regex` only: also look in tool calls (their input) and tool results
    /// (their output). Default true.
    #[serde(default)]
    pub include_tools: Option<bool>,
    /// `exact` and `regex` only: skip this many matching messages (the next page).
    #[serde(default, deserialize_with = "lenient::count")]
    pub offset: Option<u64>,
    /// Only sessions whose project (working directory) contains this text, in any case, e.g.
    /// a repo name.
    #[serde(default)]
    pub project: Option<String>,
    /// Only this session: its id, or its first 6 or more characters.
    #[serde(default)]
    pub session_id: Option<String>,
    /// `claude-code` (includes its subagents), `claude-code/subagent`, `codex`, `copilot`,
    /// `cursor`, `cursor-ide` (includes its sub-conversations), `cursor-ide/subagent`,
    /// `gemini` (includes its subagents), `gemini/subagent`, `opencode` (includes its
    /// subagents), `opencode/subagent` or `vscode-copilot` (VS Code's Copilot Chat).
    #[serde(default)]
    pub source_agent: Option<String>,
    /// `user` or `assistant` (only their messages are searchable).
    #[serde(default)]
    pub role: Option<String>,
    /// From this date, inclusive: YYYY-MM-DD (a day in the server's time zone), RFC 3339,
    /// today, yesterday, or a time ago (12h, 3d, 2w, 6mo, 1y).
    #[serde(default)]
    pub from_date: Option<String>,
    /// Up to this date, inclusive of its whole day (YYYY-MM-DD, today, yesterday), or up to
    /// (not including) an RFC 3339 time or a time ago.
    #[serde(default)]
    pub to_date: Option<String>,
    /// `relevance` (default) or `recency` (newest first among matches).
    #[schemars(with = "Option<Named<SortBy>>")]
    pub sort_by: Option<SortBy>,
    /// Messages to return, 1-50 (default 10).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u64>,
}

/// pond_get_session arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetSessionArgs {
    /// The session id (from search hits, or `SELECT id FROM sessions`), or its first 6 or
    /// more characters.
    pub id: String,
    /// Read from the `start` (default) or the `end` of the session.
    #[schemars(with = "Option<Named<PageFrom>>")]
    pub from: Option<PageFrom>,
    /// Messages per page, 1-200 (default 50); the page also stops at a byte budget.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u64>,
    /// The page after this message id (continue forwards).
    #[serde(default)]
    pub after: Option<String>,
    /// The page before this message id (continue backwards).
    #[serde(default)]
    pub before: Option<String>,
    /// Also list the parent's messages a subagent session replays at its start (its
    /// context, left out by default: the parent session has them).
    #[serde(default)]
    pub include_replayed: Option<bool>,
}

/// pond_get_message arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetMessageArgs {
    /// The message id (from search hits or a session page), or its first 6 or more
    /// characters.
    pub id: String,
    /// Messages to show before it, 0-20 (default 2).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 0, max = 20))]
    pub context_before: Option<u64>,
    /// Messages to show after it, 0-20 (default 2).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 0, max = 20))]
    pub context_after: Option<u64>,
}

/// pond_sql arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SqlArgs {
    /// One read-only SELECT (or WITH ... SELECT) over sessions, messages, parts, records,
    /// files. See the pond://schema resource.
    pub query: String,
    /// Seconds before the query is stopped, 1-300 (default 30).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 1, max = 300))]
    pub timeout_seconds: Option<u64>,
    /// Rows to return at most, 1-1000 (default 200).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_rows: Option<u64>,
    /// `table` (default), `json` or `csv`.
    #[schemars(with = "Option<Named<Format>>")]
    pub format: Option<Format>,
}

/// pond_sessions arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionsArgs {
    /// Only sessions whose project (working directory) contains this text, in any case, e.g.
    /// a repo name.
    #[serde(default)]
    pub project: Option<String>,
    /// Only this client's sessions: a name pond_search's `source_agent` takes
    /// (`claude-code` includes its subagents, `codex`, `cursor`, `gemini`, ...).
    #[serde(default)]
    pub source_agent: Option<String>,
    /// Only sessions active from this date on (their last message at or after it), in the
    /// forms pond_search's `from_date` takes.
    #[serde(default)]
    pub from_date: Option<String>,
    /// Only sessions active up to this date (their first message before its end), in the
    /// forms pond_search's `to_date` takes.
    #[serde(default)]
    pub to_date: Option<String>,
    /// Sessions to return, 1-50 (default 20); a number out of range is taken as the
    /// nearest, 0 as 1 and more than 50 as 50, as pond_search takes its limit.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u64>,
    /// Sessions to skip, newest first: the next page starts at the offset the last answer
    /// names.
    #[serde(default, deserialize_with = "lenient::count")]
    pub offset: Option<u64>,
}

/// pond_usage arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageArgs {
    /// What a row is: `daily` (default), `weekly`, `monthly`, `session`, `model`,
    /// `project` or `client`.
    #[serde(default)]
    #[schemars(with = "Option<Named<UsageGroup>>")]
    pub group: Option<UsageGroup>,
    /// Only calls from this date on, in the forms pond_search's `from_date` takes
    /// (2026-03-01, yesterday, 7d, 2w).
    #[serde(default)]
    pub from_date: Option<String>,
    /// Only calls up to this date, inclusive of its whole day.
    #[serde(default)]
    pub to_date: Option<String>,
    /// Only calls in projects whose working directory contains this text, in any case.
    #[serde(default)]
    pub project: Option<String>,
    /// Only this client's calls: a name pond_search's `source_agent` takes.
    #[serde(default)]
    pub source_agent: Option<String>,
    /// Only models whose name contains this text, in any case.
    #[serde(default)]
    pub model: Option<String>,
    /// `table` (default), `json` or `csv`.
    #[serde(default)]
    #[schemars(with = "Option<Named<Format>>")]
    pub format: Option<Format>,
}

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
        schema: schema_of::<SearchArgs>,
    },
    ToolSpec {
        name: "pond_sessions",
        description: "List past agent sessions, newest first: each with its title (the client's, else its first prompt), client, project, first and last message time, message count, size and id. Filter by project, source_agent and dates, e.g. what was done in one project last week, in one call; page with offset. Read one with pond_get_session.",
        schema: schema_of::<SessionsArgs>,
    },
    ToolSpec {
        name: "pond_get_session",
        description: "Read one session's messages in order, a page at a time (from the start or the end; continue with after/before a message id). Use it to reread a whole conversation found by pond_search.",
        schema: schema_of::<GetSessionArgs>,
    },
    ToolSpec {
        name: "pond_get_message",
        description: "Show one message in full (text, thinking, tool calls and results) with the messages around it. Use it to read a search hit in context.",
        schema: schema_of::<GetMessageArgs>,
    },
    ToolSpec {
        name: "pond_sql",
        description: "Run one read-only SQL SELECT over the archive (tables sessions, messages, parts, records, files; DataFusion dialect). Use it for counts, lists and aggregates that search cannot answer, e.g. sessions per project or the tools that failed most. Read the pond://schema resource for columns and examples. Capped by rows, bytes and a timeout.",
        schema: schema_of::<SqlArgs>,
    },
    ToolSpec {
        name: "pond_usage",
        description: "Tokens and cost of past agent sessions, from the token counts each client recorded (Claude Code, Codex, Gemini CLI, OpenCode): per day (default), week, month, session, model, project or client, with totals, e.g. how much one project cost last week. Cost is what the client recorded, else computed from a dated price table; a model without a price says \"no price\".",
        schema: schema_of::<UsageArgs>,
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
        let a: SearchArgs = parse(
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
        let e = parse::<SqlArgs>(
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
        let a: SearchArgs = parse(
            "pond_search",
            args(serde_json::json!({"query": "x", "limit": "7"})),
        )
        .unwrap();
        assert_eq!(a.limit, Some(7));
        let a: SearchArgs = parse(
            "pond_search",
            args(serde_json::json!({"query": "x", "limit": 7})),
        )
        .unwrap();
        assert_eq!(a.limit, Some(7));
        let e = parse::<SearchArgs>(
            "pond_search",
            args(serde_json::json!({"query": "x", "limit": -1})),
        )
        .unwrap_err();
        assert!(e.contains("Accepted arguments"), "{e}");
        let e = parse::<SqlArgs>("pond_sql", None).unwrap_err();
        assert!(e.contains("missing field `query`"), "{e}");
    }
}
